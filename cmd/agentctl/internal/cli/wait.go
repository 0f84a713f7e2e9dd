package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// follow polls the run until it finishes and maps its end to the exit
// code. Ctrl-C (ctx cancelled) stops following, not the run.
func (a *app) follow(ctx context.Context, runID string) error {
	c, err := a.client()
	if err != nil {
		return fmt.Errorf("run %s was submitted but cannot be followed: %w", runID, err)
	}
	if a.output == formatText {
		fmt.Fprintf(a.env.Stdout, "%s run %s submitted\n", clock(), runID)
	}
	p := &progressPrinter{a: a, steps: map[string]string{}, width: minNameWidth}
	tick := time.NewTicker(a.poll)
	defer tick.Stop()
	for {
		run, err := c.RunsGet(ctx, runID)
		switch {
		case ctx.Err() != nil:
			return a.stoppedWaiting(runID)
		case errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrTimeout):
			// Not folded by a node yet, or a slow answer: ask again.
		case err != nil:
			return fmt.Errorf("run %s was submitted but cannot be followed: %w", runID, err)
		default:
			if err := p.show(run); err != nil {
				return err
			}
			if finished(run.Status) {
				return a.finish(run)
			}
		}
		select {
		case <-ctx.Done():
			return a.stoppedWaiting(runID)
		case <-tick.C:
		}
	}
}

func (a *app) stoppedWaiting(runID string) error {
	fmt.Fprintf(a.env.Stderr, "stopped waiting; run %s keeps going (see: agentctl run show %s)\n", runID, runID)
	return &exitError{code: ExitInterrupted}
}

// finish prints the final state (json) and returns the run's exit code.
func (a *app) finish(run *api.Run) error {
	if a.output == formatJSON {
		if err := a.writeJSON(run); err != nil {
			return err
		}
	}
	switch run.Status {
	case event.RunSucceeded:
		return nil
	case event.RunCancelled:
		return &exitError{code: ExitRunCancelled, err: fmt.Errorf("run %s was cancelled%s", run.ID, because(run.Reason))}
	}
	return &exitError{code: ExitRunFailed, err: fmt.Errorf("run %s failed%s", run.ID, because(run.Reason))}
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// progressPrinter prints what changed since the last poll.
type progressPrinter struct {
	a      *app
	status string
	steps  map[string]string // step id → last printed state
	last   []byte            // last jsonl line
	width  int               // name column: grows with the longest step id
}

func (p *progressPrinter) show(run *api.Run) error {
	switch p.a.output {
	case formatJSON:
		return nil // only the final object
	case formatJSONL:
		b, err := json.Marshal(run)
		if err != nil {
			return err
		}
		if bytes.Equal(b, p.last) {
			return nil
		}
		p.last = b
		_, err = fmt.Fprintf(p.a.env.Stdout, "%s\n", b)
		return err
	}
	for _, s := range run.Steps {
		p.width = max(p.width, len(s.ID))
	}
	runChanged := run.Status != p.status
	p.status = run.Status
	if runChanged && !finished(run.Status) {
		p.line("run", run.Status+because(run.Reason), "")
	}
	for _, s := range run.Steps {
		state := fmt.Sprintf("%s|%d|%s", s.Status, s.Attempt, s.Node)
		if p.steps[s.ID] == state {
			continue
		}
		p.steps[s.ID] = state
		p.line(s.ID, s.Status, stepDetail(s))
	}
	if runChanged && finished(run.Status) {
		p.line("run", run.Status+because(run.Reason), "")
	}
	return nil
}

// line prints "12:00:01 build     running    (attempt 1 on node-a)".
func (p *progressPrinter) line(name, status, detail string) {
	l := fmt.Sprintf("%s %-*s  %-9s  %s", clock(), p.width, name, status, detail)
	fmt.Fprintln(p.a.env.Stdout, strings.TrimRight(l, " "))
}

// stepDetail is "(attempt 1 on node-a, exit 0, 1.2s)" with the parts known.
func stepDetail(s api.Step) string {
	var parts []string
	if s.Attempt > 0 {
		a := fmt.Sprintf("attempt %d", s.Attempt)
		if s.Node != "" {
			a += " on " + s.Node
		}
		parts = append(parts, a)
	}
	if s.ExitCode != nil {
		parts = append(parts, fmt.Sprintf("exit %d", *s.ExitCode))
	}
	if s.StartedAt != nil && s.FinishedAt != nil {
		parts = append(parts, fmtDuration(s.FinishedAt.Sub(*s.StartedAt)))
	}
	if s.Error != "" {
		parts = append(parts, truncate(s.Error, 80))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// minNameWidth is the narrowest name column of progress lines.
const minNameWidth = 8

// now is the clock of progress lines.
var now = time.Now

func clock() string { return now().Format("15:04:05") }
