package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// smallRun is the most steps a run may have for goal submit --wait to
// print a line whenever a step changes (it then reads every step at each
// poll, one page). A bigger run shows its progress from the step counts of
// its summary, which cost the same whatever the run's size.
const smallRun = 200

// countsEvery is how often at most a big run's progress line is printed.
const countsEvery = time.Second

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
		sum, run, err := p.poll(ctx, c, runID)
		switch {
		case ctx.Err() != nil:
			return a.stoppedWaiting(runID)
		case errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrTimeout):
			// Not folded by a node yet, or a slow answer: ask again.
		case err != nil:
			return fmt.Errorf("run %s was submitted but cannot be followed: %w", runID, err)
		default:
			lines := p.lines
			if err := p.show(sum, run); err != nil {
				return err
			}
			if finished(sum.Status) {
				return a.finish(ctx, c, sum)
			}
			if a.output == formatText && (p.lines != lines || time.Since(p.gatesAt) >= gatesEvery) {
				p.showGates(ctx, c, sum.ID)
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

// finish prints the final run (json: the whole run object, every step)
// and returns the run's exit code.
func (a *app) finish(ctx context.Context, c *api.Client, sum *api.RunSummary) error {
	if a.output == formatJSON {
		run, err := c.RunsGet(ctx, sum.ID)
		if err != nil {
			return fmt.Errorf("run %s finished (%s) but cannot be read: %w", sum.ID, sum.Status, err)
		}
		if err := a.writeJSON(run); err != nil {
			return err
		}
	}
	switch sum.Status {
	case event.RunSucceeded:
		return nil
	case event.RunCancelled:
		return &exitError{code: ExitRunCancelled, err: fmt.Errorf("run %s was cancelled%s", sum.ID, because(sum.Reason))}
	}
	return &exitError{code: ExitRunFailed, err: fmt.Errorf("run %s failed%s", sum.ID, because(sum.Reason))}
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
	big    bool // the run has more than smallRun steps: progress from counts
	status event.RunStatus
	steps  map[string]string // step id → last printed state
	counts string            // last printed step counts (big runs)
	shown  time.Time         // when counts were last printed
	last   []byte            // last jsonl line
	width  int               // name column: grows with the longest step id
	// reason and revision are the run's last printed.
	reason   string
	revision int
	// gates are the open gates printed (step and subject); gatesAt is
	// when they were last read.
	gates   map[string]bool
	gatesAt time.Time
	// lines counts the lines printed.
	lines int
}

// gatesEvery is how often at most --wait reads the run's open gates
// while nothing else changes.
const gatesEvery = time.Second

// showGates prints each open gate of the run once: what waits for an
// operator, and the command that shows it. A node that cannot answer
// leaves it for the next poll.
func (p *progressPrinter) showGates(ctx context.Context, c *api.Client, run string) {
	p.gatesAt = time.Now()
	gs, err := gatesOf(ctx, c, api.GatesRequest{Run: run})
	if err != nil {
		return
	}
	if p.gates == nil {
		p.gates = map[string]bool{}
	}
	for _, g := range gs {
		key := g.Step + "\x00" + g.Subject
		if p.gates[key] {
			continue
		}
		p.gates[key] = true
		why := g.Reason
		if v := g.Verdict; v != nil {
			why = fmt.Sprintf("%s (level %s): %s", v.Action, v.Level, v.Why)
		}
		see := "agentctl gate show " + g.Run
		if g.Step != "" {
			see += " " + g.Step
		}
		p.line("gate", stepName(g), "waits for an operator: "+truncate(why, 120)+"; see: "+see)
	}
}

// poll reads the run: its summary, and every step while the run is small
// (nil run once it is big).
func (p *progressPrinter) poll(ctx context.Context, c *api.Client, id string) (*api.RunSummary, *api.Run, error) {
	if p.big || p.a.output != formatText {
		sum, err := c.RunSummary(ctx, id)
		return sum, nil, err
	}
	d, err := c.RunDetail(ctx, api.RunsGetRequest{ID: id, Limit: smallRun})
	if err != nil {
		return nil, nil, err
	}
	if d.Steps == nil || !d.Steps.End {
		p.big = true
		return &d.Run, nil, nil
	}
	run := &api.Run{ID: d.Run.ID, Goal: d.Run.Goal, Status: d.Run.Status, Reason: d.Run.Reason, Revision: d.Run.Revision,
		CreatedAt: d.Run.CreatedAt, FinishedAt: d.Run.FinishedAt, Steps: d.Steps.Items}
	return &d.Run, run, nil
}

func (p *progressPrinter) show(sum *api.RunSummary, run *api.Run) error {
	switch p.a.output {
	case formatJSON:
		return nil // only the final object
	case formatJSONL:
		b, err := json.Marshal(sum)
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
	if run != nil {
		for _, s := range run.Steps {
			p.width = max(p.width, len(s.ID))
		}
	}
	runChanged := sum.Status != p.status
	reasonChanged := sum.Reason != p.reason
	p.status, p.reason = sum.Status, sum.Reason
	if (runChanged || reasonChanged) && !finished(sum.Status) {
		p.line("run", string(sum.Status)+because(sum.Reason), "")
	}
	if p.revision > 0 && sum.Revision > p.revision {
		p.line("plan", fmt.Sprintf("revision %d", sum.Revision), "")
	}
	p.revision = max(p.revision, sum.Revision)
	if run != nil {
		p.showSteps(run)
	} else {
		p.showCounts(sum, runChanged && finished(sum.Status))
	}
	if runChanged && finished(sum.Status) {
		p.line("run", string(sum.Status)+because(sum.Reason), "")
	}
	return nil
}

// showSteps prints a line for every step that changed.
func (p *progressPrinter) showSteps(run *api.Run) {
	for _, s := range run.Steps {
		state := fmt.Sprintf("%s|%d|%s", s.Status, s.Attempt, s.Node)
		if p.steps[s.ID] == state {
			continue
		}
		p.steps[s.ID] = state
		status, detail := stepProgress(s)
		p.line(s.ID, status, detail)
	}
}

// stepProgress is the status and detail of a step's progress line. An
// attempt that failed and will be tried again shows as failed (or given
// up, when its node was lost, drained or did not start it), not as the
// ready or pending of the next attempt.
func stepProgress(s api.Step) (status, detail string) {
	status, detail = s.Status, stepDetail(s)
	if s.Error == "" || s.Attempt == 0 || (s.Status != string(core.StepReady) && s.Status != string(core.StepPending)) {
		return status, detail
	}
	switch core.Code(s.Code) {
	case core.CodeNodeLost, core.CodeNotStarted, core.CodeNodeDraining:
		return "given up", detail + "; another attempt follows"
	}
	return "failed", detail + "; it will be tried again"
}

// showCounts prints "12:00:01 steps  4210/10000  (succeeded 4210, running
// 8, ready 5782)" when the counts changed, at most every countsEvery unless
// final.
func (p *progressPrinter) showCounts(sum *api.RunSummary, final bool) {
	if sum.Steps == 0 {
		return
	}
	counts := stepCounts(sum.StepCounts)
	if counts == p.counts || (!final && time.Since(p.shown) < countsEvery) {
		return
	}
	p.counts, p.shown = counts, time.Now()
	p.line("steps", fmt.Sprintf("%d/%d", api.Done(*sum), sum.Steps), "("+counts+")")
}

// stepOrder is the order step statuses are listed in.
var stepOrder = []string{
	string(core.StepSucceeded), string(core.StepSkipped), string(core.StepFailed), string(core.StepCancelled),
	string(core.StepRunning), string(core.StepAssigned), string(core.StepReady), string(core.StepPending),
}

// stepCounts is "succeeded 4210, running 8, ready 5782": the known
// statuses in stepOrder, then any other in name order.
func stepCounts(counts map[string]int) string {
	var parts []string
	for _, st := range stepOrder {
		if n := counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
		}
	}
	var other []string
	for st, n := range counts {
		if n > 0 && !slices.Contains(stepOrder, st) {
			other = append(other, fmt.Sprintf("%s %d", st, n))
		}
	}
	slices.Sort(other)
	return strings.Join(append(parts, other...), ", ")
}

// line prints "12:00:01 build     running    (attempt 1 on node-a)".
func (p *progressPrinter) line(name, status, detail string) {
	l := fmt.Sprintf("%s %-*s  %-9s  %s", clock(), p.width, name, status, detail)
	fmt.Fprintln(p.a.env.Stdout, strings.TrimRight(l, " "))
	p.lines++
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
