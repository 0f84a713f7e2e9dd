package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

const (
	auditPage = 1000
	// auditWait is how long one follow request long-polls.
	auditWait = 10 * time.Second
	// followWarnAfter is how many follow requests in a row may fail
	// before agentctl says so on stderr (and again every followWarnEvery).
	followWarnAfter = 3
	followWarnEvery = 20
)

// followPause is the wait before asking again after a failed request.
var followPause = time.Second

type tailOpts struct {
	follow bool
	run    string
	since  time.Duration
	types  []string
}

func (a *app) auditCmd() *cobra.Command {
	var o tailOpts
	tail := &cobra.Command{
		Use:   "tail",
		Short: "Print the audit ledger, and follow it",
		Long: `Print the committed ledger entries, oldest first, and exit; with --follow
keep printing each entry as it commits until Ctrl-C.

Text columns: seq, time, type, run, node, summary. -o jsonl prints one
audit line object per entry: {"seq","subject","type","run","node","time",
"data","jws","stream_seq","stream_time"}, where jws is the exact signed
envelope the event travelled in (verify it with the cluster's root.pub).
-o json prints a JSON array, or one object per line with --follow.

--since selects by stream time (when the stream received the message, the
clock events are judged by): the first entry at or after it, and every one
after that. --type keeps the entries of the types named (repeat it, or
separate them with commas); the node filters, so selecting a few entries of
a long history costs those entries. agentctl reads every page up to the
end the node reports.`,
		Example: `  agentctl audit tail
  agentctl audit tail --run 0190a3c2 --since 1h
  agentctl audit tail --type gate.opened,gate.decided --since 24h
  agentctl audit tail --follow -o jsonl | jq -c 'select(.type=="task.finished")'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.since < 0 {
				return usagef("--since must not be negative")
			}
			for _, t := range o.types {
				if !event.Known(event.Type(t)) {
					return usagef("--type %q is not an event type (see docs/protocol.md; e.g. task.finished, gate.opened)", t)
				}
			}
			return a.auditTail(cmd.Context(), o)
		},
	}
	f := tail.Flags()
	f.BoolVar(&o.follow, "follow", false, "keep printing entries as they commit (Ctrl-C to stop)")
	f.StringVar(&o.run, "run", "", "only entries of this run (id or prefix)")
	f.DurationVar(&o.since, "since", 0, "only entries newer than this (e.g. 30m, 2h)")
	f.StringSliceVar(&o.types, "type", nil, "only entries of these event types (repeat, or separate with commas)")
	return group("audit", "Read the audit ledger", "Every event of the cluster, in ledger order, as committed.", tail)
}

func (a *app) auditTail(ctx context.Context, o tailOpts) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	req := api.AuditRequest{Run: o.run, Types: o.types, Limit: auditPage}
	if o.since > 0 {
		req.Since = now().Add(-o.since)
	}
	var collected []api.AuditLine // json array mode
	arrayMode := a.output == formatJSON && !o.follow
	emit := func(l api.AuditLine) error {
		if len(o.types) > 0 && !slices.Contains(o.types, l.Type) {
			return nil // a node older than the filter sends every type
		}
		if arrayMode {
			collected = append(collected, l)
			return nil
		}
		return a.printAuditLine(l)
	}
	// Every page up to the end the node reports; resume is where a follow
	// goes on from.
	var resume string
	fetch := func(ctx context.Context, cursor string) (*api.Page[api.AuditLine], error) {
		req.Cursor = cursor
		p, err := c.Audit(ctx, req)
		if err != nil {
			return nil, err
		}
		resume = p.Next
		return &p.Page, nil
	}
	for l, err := range api.Walk(ctx, "", fetch) {
		if err != nil {
			if o.follow && ctx.Err() != nil {
				return nil // Ctrl-C ends a follow normally
			}
			return err
		}
		if err := emit(l); err != nil {
			return err
		}
	}
	if !o.follow {
		if arrayMode {
			return writeList(a, collected)
		}
		return nil
	}
	req.Wait = auditWait
	return a.followAudit(ctx, c, req, resume, emit)
}

// followAudit long-polls from cursor until ctx ends. A request that times
// out, finds the node busy or no node at all is asked again after a pause;
// when that keeps happening it says so on stderr, and when answers come
// back again, that too.
func (a *app) followAudit(ctx context.Context, c *api.Client, req api.AuditRequest, cursor string, emit func(api.AuditLine) error) error {
	failed := 0
	for {
		req.Cursor = cursor
		p, err := c.Audit(ctx, req)
		switch {
		case ctx.Err() != nil:
			return nil // Ctrl-C ends a follow normally
		case err == nil:
			if failed >= followWarnAfter {
				a.note("audit: the node answers again; following")
			}
			failed = 0
		case errors.Is(err, api.ErrTimeout) || errors.Is(err, api.ErrBusy) || errors.Is(err, api.ErrNoNode):
			if failed++; failed == followWarnAfter || (failed > followWarnAfter && (failed-followWarnAfter)%followWarnEvery == 0) {
				a.note("audit: %d requests in a row failed (last: %v); still trying, Ctrl-C to stop", failed, err)
			}
			t := time.NewTimer(followPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		default:
			return err
		}
		for _, l := range p.Items {
			if err := emit(l); err != nil {
				return err
			}
		}
		if p.Next != "" {
			cursor = p.Next
		}
	}
}

func (a *app) printAuditLine(l api.AuditLine) error {
	if a.output != formatText {
		return a.writeLine(l) // json while following: one object per line
	}
	_, err := fmt.Fprintf(a.env.Stdout, "%6d  %s  %-15s  %-36s  %-12s  %s\n",
		l.Seq, l.Time.Local().Format("2006-01-02 15:04:05.000"), l.Type, dash(l.Run), dash(l.Node), summary(l))
	return err
}
