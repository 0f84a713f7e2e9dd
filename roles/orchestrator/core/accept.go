package core

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// accept emits plan.accepted for a planned run's revision (rule 2 of
// Decide) and, in the same call, what the fold of that acceptance makes
// possible at once: Decide's rules for a running run applied to the run as
// foldPlanAccepted leaves it (afterAccept), so the steps the acceptance
// makes ready are assigned, or gated, without waiting for the acceptance
// to come back from the ledger. Those decisions share the acceptance's
// basis and time; the leader emits them in one batch, the acceptance
// first, and the outbox publishes in emit order, so the ledger folds the
// acceptance before them — one ledger round trip from a plan to its first
// assignment instead of two.
//
// Safe because nothing of it is new to the fold: an assignment for a run
// that is not running is ignored (foldTaskAssigned), a deposed leader's
// acceptance and assignments are fenced alike, and while the acceptance
// is in flight the assignments are too (a later Decide neither repeats
// them nor forgets their load: unfolded finds their steps pending). A
// cancel folded in between cancels the assignments in flight (stopRun). A
// replay decides on the same basis with the same code, and a history
// written before (the assignments decided a call later, on the state
// after the acceptance) is reproduced too: that call decides them again.
func (d *decider) accept(r *Run) {
	key := acceptKey(r.ID, r.Revision)
	if d.inflight[key] {
		return // decided by an earlier call, with what followed from it
	}
	d.emit(key, event.PlanAccepted, r.ID, "",
		event.PlanAcceptedData{Decision: d.decision(), Revision: r.Revision})
	d.running(afterAccept(r, d.now))
}

// afterAccept returns a copy of the planned run r as foldPlanAccepted
// leaves it when it folds an acceptance of time at, for what Decide's
// rules for a running run read: the steps whose dependencies are done are
// ready since at. Its status stays planned (only the fold moves a status,
// through the table; those rules tell running from paused alone). r and
// its steps are not changed.
func afterAccept(r *Run, at time.Time) *Run {
	next := *r
	next.Steps = make([]*Step, len(r.Steps))
	for i, st := range r.Steps {
		c := *st
		if c.Status == StepPending && r.depsDone(i) {
			c.ReadyAt = at
		}
		next.Steps[i] = &c
	}
	return &next
}
