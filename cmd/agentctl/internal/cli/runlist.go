package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

// defaultRunListLimit is how many runs run list shows unless told.
const defaultRunListLimit = 50

type runListOpts struct {
	req          api.RunsListRequest
	since, until string
	limit        int
}

func (a *app) runListCmd() *cobra.Command {
	var o runListOpts
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: `List runs, newest first (by the time their goal reached the stream, then
run id), with their status and step progress (steps done/total).

The cluster answers in pages; agentctl follows them until --limit runs
(default 50; 0 for every run that matches). When it stops before the
listing ends, the command that lists the next runs is printed on stderr
("more: agentctl run list --after CURSOR"). --before CURSOR keeps runs newer than a cursor.
--since and --until take an RFC 3339 time or a duration before now (2h).

-o json prints a JSON array of run summaries (see docs/cli.md), -o jsonl
one summary per line.`,
		Example: `  agentctl run list
  agentctl run list --status running --since 2h
  agentctl run list --goal deploy --limit 200
  agentctl run list --limit 0 -o jsonl | jq -r .id`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.resolve(time.Now()); err != nil {
				return err
			}
			return a.runList(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.req.Status, "status", "", "only runs with this status ("+strings.Join(api.RunStatuses, ", ")+")")
	f.StringVar(&o.req.Goal, "goal", "", "only runs whose goal contains this text")
	f.StringVar(&o.since, "since", "", "only runs submitted at or after this time (RFC 3339, or a duration before now: 2h)")
	f.StringVar(&o.until, "until", "", "only runs submitted before this time (RFC 3339, or a duration before now)")
	f.StringVar(&o.req.After, "after", "", "continue a listing: runs older than this cursor")
	f.StringVar(&o.req.Before, "before", "", "only runs newer than this cursor")
	f.IntVar(&o.limit, "limit", defaultRunListLimit, "at most this many runs (0: every run that matches)")
	return cmd
}

// resolve checks the flags and turns --since/--until into times.
func (o *runListOpts) resolve(now time.Time) error {
	if o.req.Status != "" && !slices.Contains(api.RunStatuses, o.req.Status) {
		return usagef("--status %q: want one of %s", o.req.Status, strings.Join(api.RunStatuses, ", "))
	}
	if o.limit < 0 {
		return usagef("--limit must not be negative")
	}
	for _, t := range []struct {
		flag, arg string
		to        *time.Time
	}{{"since", o.since, &o.req.Since}, {"until", o.until, &o.req.Until}} {
		if t.arg == "" {
			continue
		}
		v, err := api.ParseTime(t.arg, now)
		if err != nil {
			return usagef("--%s %q: want an RFC 3339 time (2026-03-01T12:00:00Z) or a duration (2h)", t.flag, t.arg)
		}
		*t.to = v
	}
	if !o.req.Since.IsZero() && !o.req.Until.IsZero() && !o.req.Since.Before(o.req.Until) {
		return usagef("--since must be before --until")
	}
	return nil
}

func (a *app) runList(ctx context.Context, o runListOpts) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	out := a.runListWriter()
	add := out.add
	var newer []api.RunSummary
	if o.req.Before != "" {
		// Listing towards newer runs: every page is newest first but the
		// pages come oldest first. Gather them, then print newest first.
		add = func(r api.RunSummary) error {
			newer = append(newer, r)
			return nil
		}
	}
	next, err := c.RunsListAll(ctx, o.req, o.limit, add)
	if err != nil {
		return err
	}
	slices.SortStableFunc(newer, func(x, y api.RunSummary) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(y.ID, x.ID)
	})
	for _, r := range newer {
		if err := out.add(r); err != nil {
			return err
		}
	}
	if err := out.close(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(a.env.Stderr, "more: %s\n", o.nextCommand(next))
	}
	return nil
}

// nextCommand is the run list command that continues with cursor and the
// same filters (times made absolute, so that it lists the same runs
// later): --after cursor, or --before cursor when listing towards newer
// runs.
func (o runListOpts) nextCommand(cursor string) string {
	parts := []string{"agentctl run list"}
	add := func(flag, v string) {
		if v != "" {
			parts = append(parts, "--"+flag+" "+shellQuote(v))
		}
	}
	add("status", o.req.Status)
	add("goal", o.req.Goal)
	if !o.req.Since.IsZero() {
		add("since", o.req.Since.UTC().Format(time.RFC3339Nano))
	}
	if !o.req.Until.IsZero() {
		add("until", o.req.Until.UTC().Format(time.RFC3339Nano))
	}
	if o.limit != defaultRunListLimit {
		add("limit", strconv.Itoa(o.limit))
	}
	if o.req.Before != "" {
		add("after", o.req.After)
		add("before", cursor)
	} else {
		add("after", cursor)
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:+/=,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runListWriter prints summaries page by page as they arrive: a table
// (text), one JSON array written incrementally (json), or lines (jsonl).
type runListWriter struct {
	a  *app
	n  int
	tw *tabwriter.Writer
}

func (a *app) runListWriter() *runListWriter { return &runListWriter{a: a} }

// add prints one run.
func (w *runListWriter) add(r api.RunSummary) error {
	if err := w.one(r); err != nil {
		return err
	}
	w.n++
	return nil
}

func (w *runListWriter) one(r api.RunSummary) error {
	out := w.a.env.Stdout
	switch w.a.output {
	case formatJSONL:
		return w.a.writeLine(r)
	case formatJSON:
		b, err := json.MarshalIndent(r, "  ", "  ")
		if err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		sep := ",\n  "
		if w.n == 0 {
			sep = "[\n  "
		}
		_, err = fmt.Fprintf(out, "%s%s", sep, b)
		return err
	}
	if w.tw == nil {
		w.tw = w.a.table()
		fmt.Fprintln(w.tw, "ID\tSTATUS\tSTEPS\tCREATED\tGOAL")
	}
	_, err := fmt.Fprintf(w.tw, "%s\t%s\t%d/%d\t%s\t%s\n", r.ID, r.Status, api.Done(r), r.Steps, fmtTime(r.CreatedAt), truncate(oneLine(r.Goal), 60))
	return err
}

func (w *runListWriter) close() error {
	out := w.a.env.Stdout
	switch {
	case w.a.output == formatJSON && w.n == 0:
		_, err := fmt.Fprintln(out, "[]")
		return err
	case w.a.output == formatJSON:
		_, err := fmt.Fprint(out, "\n]\n")
		return err
	case w.a.output == formatJSONL:
		return nil
	case w.tw == nil:
		_, err := fmt.Fprintln(out, "no runs")
		return err
	}
	return w.tw.Flush()
}
