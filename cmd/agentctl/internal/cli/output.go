package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// Output formats.
const (
	formatText  = "text"
	formatJSON  = "json"
	formatJSONL = "jsonl"
)

// writeJSON prints v as indented JSON (json) or as one compact line
// (jsonl).
func (a *app) writeJSON(v any) error {
	if a.output != formatJSON {
		return a.writeLine(v)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = fmt.Fprintf(a.env.Stdout, "%s\n", b)
	return err
}

// writeLine prints v as one compact JSON line.
func (a *app) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = fmt.Fprintf(a.env.Stdout, "%s\n", b)
	return err
}

// writeList prints items as a JSON array (json) or one per line (jsonl).
func writeList[T any](a *app, items []T) error {
	if a.output == formatJSON {
		if items == nil {
			items = []T{}
		}
		return a.writeJSON(items)
	}
	for _, it := range items {
		if err := a.writeLine(it); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) table() *tabwriter.Writer {
	return tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

// fmtSpan is how long from start to end (or to now when end is nil).
func fmtSpan(start, end *time.Time, now time.Time) string {
	if start == nil {
		return "-"
	}
	stop := now
	if end != nil {
		stop = *end
	}
	return fmtDuration(stop.Sub(*start))
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// truncate cuts s to n runes, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// maxDepsShown is how many dependencies a table cell lists before it
// counts the rest: a step after a fan-out of thousands would otherwise
// print them all on its line (-o json has every one).
const maxDepsShown = 5

// depsCell is a table cell of a step's dependencies: the first
// maxDepsShown, then how many more; "-" for none.
func depsCell(ids []string) string {
	if len(ids) <= maxDepsShown {
		return dash(strings.Join(ids, ","))
	}
	return fmt.Sprintf("%s,… (+%d more)", strings.Join(ids[:maxDepsShown], ","), len(ids)-maxDepsShown)
}
