package improve

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Monitor are the thresholds that judge an applied proposal. Like Rules
// they are the build's, never a proposal's.
type Monitor struct {
	// Threshold is the worsening that reverts: the error rate after the
	// change above the baseline's times (1 + Threshold).
	Threshold float64
	// MinBaseline, MinAfter are the sample sizes below which nothing is
	// judged (a baseline smaller than MinBaseline is judged as if it had
	// no error: any error rate after counts as worse).
	MinBaseline, MinAfter int
	// MaxWatch is how long an applied proposal is watched at most: past
	// it, one without MinAfter samples is implemented (nothing it
	// touched ran, so nothing got worse).
	MaxWatch time.Duration
}

// DefaultMonitor are the thresholds in force: +25 %, at least 3 samples
// before and 5 after, watched for up to 7 days.
func DefaultMonitor() Monitor {
	return Monitor{Threshold: 0.25, MinBaseline: 3, MinAfter: 5, MaxWatch: 7 * 24 * time.Hour}
}

// Verdict is what the monitor decides about an applied proposal.
type Verdict int

// Verdicts.
const (
	// Watch: not enough samples yet.
	Watch Verdict = iota
	// Implement: the change holds.
	Implement
	// Revert: the change made things worse.
	Revert
)

// Affects reports whether the attempt a is one the proposal p touched: of
// its family, and for a shape failure or a gate, of its shape or command.
func Affects(p *Proposal, a *Attempt) bool {
	if a.Status == event.TaskCancelled || a.Status == event.TaskSkipped {
		return false
	}
	switch p.Pattern {
	case PatternShapeFailures:
		return a.Family == p.Family && slices.Contains(a.Shapes, p.Subject)
	case PatternGatesApproved:
		return a.Command == p.Subject
	case PatternNoteHelps, PatternNoteUnhelpful, PatternNoteUnused:
		return noteAffects(p, a) // rules_notes.go
	}
	return a.Family == p.Family
}

// Judge compares the error rate of what p touched since it was applied
// with its baseline.
func (m Monitor) Judge(p *Proposal, t *Telemetry, now time.Time) (Verdict, event.ProposalOutcomeData) {
	out := event.ProposalOutcomeData{Proposal: p.ID, Baseline: p.Baseline, Threshold: m.Threshold}
	after := event.Rate{From: p.Applied}
	for i := range t.Attempts {
		a := &t.Attempts[i]
		if a.Seq <= p.AppliedSeq || !Affects(p, a) {
			continue
		}
		after.Total++
		after.To = a.Time
		if a.Failed() {
			after.Errors++
		}
	}
	out.After = after
	base, aft := rate(p.Baseline), rate(after)
	if p.Baseline.Total < m.MinBaseline {
		base = 0
	}
	if after.Total < m.MinAfter {
		if now.Sub(p.Applied) >= m.MaxWatch {
			out.Reason = fmt.Sprintf("watched %s: %d of %d attempts after the change, fewer than %d to judge; nothing got worse", m.MaxWatch, after.Errors, after.Total, m.MinAfter)
			return Implement, out
		}
		return Watch, out
	}
	if aft > base*(1+m.Threshold) && after.Errors > 0 {
		out.Reason = fmt.Sprintf("error rate %s (%d of %d) after the change against %s (%d of %d) before: worse by more than %.0f%%",
			pct(aft), after.Errors, after.Total, pct(base), p.Baseline.Errors, p.Baseline.Total, m.Threshold*100)
		return Revert, out
	}
	out.Reason = fmt.Sprintf("error rate %s (%d of %d) after the change against %s (%d of %d) before",
		pct(aft), after.Errors, after.Total, pct(base), p.Baseline.Errors, p.Baseline.Total)
	return Implement, out
}

func rate(r event.Rate) float64 {
	if r.Total == 0 {
		return 0
	}
	return float64(r.Errors) / float64(r.Total)
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }
