package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

const (
	auditPage = 1000
	// auditWait is how long one follow request long-polls.
	auditWait = 10 * time.Second
)

type tailOpts struct {
	follow bool
	run    string
	since  time.Duration
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
"data","jws"}, where jws is the exact signed envelope the event travelled
in (verify it with the cluster's root.pub). -o json prints a JSON array, or
one object per line with --follow.`,
		Example: `  agentctl audit tail
  agentctl audit tail --run 0190a3c2 --since 1h
  agentctl audit tail --follow -o jsonl | jq -c 'select(.type=="task.finished")'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.since < 0 {
				return usagef("--since must not be negative")
			}
			return a.auditTail(cmd.Context(), o)
		},
	}
	f := tail.Flags()
	f.BoolVar(&o.follow, "follow", false, "keep printing entries as they commit (Ctrl-C to stop)")
	f.StringVar(&o.run, "run", "", "only entries of this run (id or prefix)")
	f.DurationVar(&o.since, "since", 0, "only entries newer than this (e.g. 30m, 2h)")
	return group("audit", "Read the audit ledger", "Every event of the cluster, in ledger order, as committed.", tail)
}

func (a *app) auditTail(ctx context.Context, o tailOpts) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	req := api.AuditRequest{Run: o.run, Limit: auditPage}
	if o.since > 0 {
		req.Since = now().Add(-o.since)
	}
	var collected []api.AuditLine // json array mode
	arrayMode := a.output == formatJSON && !o.follow
	for {
		if o.follow {
			req.Wait = auditWait
		}
		page, err := c.Audit(ctx, req)
		switch {
		case o.follow && ctx.Err() != nil:
			return nil // Ctrl-C ends a follow normally
		case o.follow && errors.Is(err, api.ErrTimeout):
			continue
		case err != nil:
			return err
		}
		for _, l := range page.Lines {
			if arrayMode {
				collected = append(collected, l)
			} else if err := a.printAuditLine(l); err != nil {
				return err
			}
		}
		last := req.After
		if n := len(page.Lines); n > 0 {
			req.After = page.Lines[n-1].Seq
		}
		if !o.follow && (len(page.Lines) < auditPage || req.After <= last) {
			break
		}
	}
	if arrayMode {
		return writeList(a, collected)
	}
	return nil
}

func (a *app) printAuditLine(l api.AuditLine) error {
	if a.output != formatText {
		return a.writeLine(l) // json while following: one object per line
	}
	_, err := fmt.Fprintf(a.env.Stdout, "%6d  %s  %-15s  %-36s  %-12s  %s\n",
		l.Seq, l.Time.Local().Format("2006-01-02 15:04:05.000"), l.Type, dash(l.Run), dash(l.Node), summary(l))
	return err
}
