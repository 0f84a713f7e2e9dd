package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/telemetry"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) telemetryCmd() *cobra.Command {
	return group("telemetry", "Export the cluster's telemetry",
		"The telemetry export is a documented projection of the ledger (docs/telemetry.md): one JSON object a line per step attempt, tool call, failure, operator correction, rating, escalation and finished run.",
		a.telemetryExportCmd())
}

// exportOpts are telemetry export's flags.
type exportOpts struct {
	since, until string
	run          string
	follow       bool
}

func (a *app) telemetryExportCmd() *cobra.Command {
	o := exportOpts{since: "24h"}
	cmd := &cobra.Command{
		Use:   "export [--since 24h] [--until TIME] [--run ID] [--follow]",
		Short: "Print the telemetry of a time window as JSON Lines",
		Long: `Print the telemetry export of a time window (default: the last 24 hours),
one JSON object a line in ledger order: {"event","timestamp","goal",
"command","risk_level","duration","exit_code","planner_model",
"planner_version","run","step","node",...} with event one of step,
tool_call, task_failure, user_correction, feedback, escalation and run
(docs/telemetry.md lists every field). The ledger is read in bounded,
signed pages of the query API (audit) and projected as it streams, so the
memory used does not grow with the window; every string is redacted.
--since and --until take a duration before now (30m, 24h, 7d) or an
RFC 3339 time; --follow keeps printing records as they commit.`,
		Example: `  agentctl telemetry export --since 24h > telemetry.jsonl
  agentctl telemetry export --since 7d | jq -c 'select(.event=="task_failure") | {command, exit_code}'
  agentctl telemetry export --run 0190a3c2 --since 30d
  agentctl telemetry export --since 1h --follow | promtail --stdin`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.output != formatText && a.output != formatJSONL {
				return usagef("telemetry export always writes JSON Lines; drop -o")
			}
			t := now()
			since, err := parseWhen(o.since, t)
			if err != nil {
				return usagef("--since: %v", err)
			}
			var until time.Time
			if o.until != "" {
				if until, err = parseWhen(o.until, t); err != nil {
					return usagef("--until: %v", err)
				}
				if o.follow {
					return usagef("--follow and --until exclude each other: a follow has no end")
				}
				if !until.After(since) {
					return usagef("--until (%s) must come after --since (%s)", until.Format(time.RFC3339), since.Format(time.RFC3339))
				}
			}
			return a.telemetryExport(cmd.Context(), since, until, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.since, "since", o.since, "start of the window: a duration before now (24h, 7d) or an RFC 3339 time")
	f.StringVar(&o.until, "until", "", "end of the window (by the time the stream stamped each event): a duration before now or an RFC 3339 time; default now")
	f.StringVar(&o.run, "run", "", "only the records of this run (id or prefix)")
	f.BoolVar(&o.follow, "follow", false, "keep printing records as they commit (Ctrl-C to stop)")
	return cmd
}

// parseWhen reads a duration before now ("24h", "7d") or an RFC 3339
// time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := time.ParseDuration(days + "h"); err == nil {
			if d < 0 {
				return time.Time{}, fmt.Errorf("%q is negative", s)
			}
			return now.Add(-24 * d), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (24h, 7d) nor an RFC 3339 time (2026-03-01T13:00:00Z)", s)
	}
	return t, nil
}

// errWindowEnd stops the walk at --until.
var errWindowEnd = errors.New("end of the window")

// telemetryExport streams the projection of the audit pages of the
// window to stdout: one page of events in memory at a time, and the
// projector's bounded context.
func (a *app) telemetryExport(ctx context.Context, since, until time.Time, o exportOpts) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	types := make([]string, len(telemetry.SourceTypes))
	for i, t := range telemetry.SourceTypes {
		types[i] = string(t)
	}
	req := api.AuditRequest{Run: o.run, Types: types, Since: since, Limit: auditPage}
	out := bufio.NewWriterSize(a.env.Stdout, 64<<10)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	p := telemetry.NewProjector()
	emit := func(l api.AuditLine) error {
		if !until.IsZero() && l.StreamTime.After(until) {
			return errWindowEnd
		}
		ev := event.Event{Seq: l.Seq, StreamSeq: l.StreamSeq, Type: event.Type(l.Type), Run: l.Run, Node: l.Node, Time: l.Time, Subject: l.Subject, Data: l.Data}
		if err := p.Project(ev, func(r telemetry.Record) error { return enc.Encode(r) }); err != nil {
			a.note("telemetry: %v (skipped)", err)
		}
		return nil
	}
	var resume string
	fetch := func(ctx context.Context, cursor string) (*api.Page[api.AuditLine], error) {
		req.Cursor = cursor
		pg, err := c.Audit(ctx, req)
		if err != nil {
			return nil, err
		}
		resume = pg.Next
		// A page's lines are written before the next is asked for.
		if err := out.Flush(); err != nil {
			return nil, fmt.Errorf("telemetry export: write: %w", err)
		}
		return &pg.Page, nil
	}
	for l, err := range api.Walk(ctx, "", fetch) {
		if err == nil {
			err = emit(l)
		}
		if errors.Is(err, errWindowEnd) {
			break
		}
		if err != nil {
			if o.follow && ctx.Err() != nil {
				return out.Flush()
			}
			return fmt.Errorf("telemetry export: %w", err)
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("telemetry export: write: %w", err)
	}
	if !o.follow {
		return nil
	}
	req.Wait = auditWait
	return a.followAudit(ctx, c, req, resume, func(l api.AuditLine) error {
		if err := emit(l); err != nil {
			return err
		}
		return out.Flush()
	})
}
