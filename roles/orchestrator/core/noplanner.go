package core

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// The no-planner rule. A goal, or a replan request, is claimed by a
// planner that can plan it (plan.claimed), and a planner that cannot
// rejects it with code no_planner once the claim timeout has passed. With
// no planner node at all nobody would say anything, and the run would
// wait for ever: so the leader fails a run that no planner answered — no
// plan.claimed, plan.proposed or plan.rejected for the revision it waits
// for — once NoPlannerAfter has passed since the goal, the replan request,
// the lapse of the latest claim (a planner that died planning, with no
// other to take its place) or the election of the leader, whichever is
// latest. NoPlannerAfter is the claim timeout plus a
// margin, so that a live planner's no_planner, which says why it could
// not plan the goal, normally comes first.
//
// The claim timeout is the cluster setting (cluster.settings,
// planning.claim_timeout), which this fold takes like the ledger nodes do:
// the event with the highest revision, its value or the default. The
// decision is a function of the fold and the clock, like a gate's expiry:
// replay decides it again.

// CodeNoPlanner: no planner claimed the run's goal (or its replan) within
// the claim timeout: none runs, or none can plan it (a run's code).
const CodeNoPlanner Code = "no_planner"

// Planning is the planning setting in force, folded from cluster.settings.
type Planning struct {
	// Revision is the settings revision it was taken from.
	Revision uint64 `json:"revision"`
	// ClaimTimeout is its claim timeout; zero means the default.
	ClaimTimeout event.Duration `json:"claim_timeout,omitzero"`
}

// PlannerWait is what a run waiting for a plan revision heard from the
// planners.
type PlannerWait struct {
	// Revision is the plan revision waited for (1: the first plan).
	Revision int `json:"revision"`
	// Since is when the wait began: the replan request's time (a first
	// plan's wait begins with the run).
	Since time.Time `json:"since,omitzero"`
	// Until is the latest claim's Until: zero before any claim.
	Until time.Time `json:"until,omitzero"`
	// Rejected is the code of the planner's rejection of a replan: set
	// to CodeNoPlanner when the planner said none could plan it.
	Rejected Code `json:"rejected,omitempty"`
}

// both folds an event with f and then g (one type that two rules read).
func both(f, g foldFunc) foldFunc {
	return func(s *State, ev event.Event) {
		f(s, ev)
		g(s, ev)
	}
}

// claimTimeout is the claim timeout in force.
func (s *State) claimTimeout() time.Duration {
	if s.Planning != nil && s.Planning.ClaimTimeout > 0 {
		return s.Planning.ClaimTimeout.Std()
	}
	return event.DefaultClaimTimeout
}

// NoPlannerAfter is how long after a goal (or a replan request, or the
// lapse of a claim) that no planner answered the leader fails its run
// with CodeNoPlanner: the claim timeout and half of it again, at least a
// second more.
func NoPlannerAfter(claimTimeout time.Duration) time.Duration {
	return claimTimeout + max(claimTimeout/2, time.Second)
}

// foldClusterPlanning takes the planning settings of a cluster.settings
// whose revision is above the one taken.
func foldClusterPlanning(s *State, ev event.Event) {
	var d event.ClusterSettingsData
	if ev.Decode(&d) != nil {
		return // the ledger nodes' fold says so
	}
	if s.Planning != nil && d.Revision <= s.Planning.Revision {
		return
	}
	s.Planning = &Planning{Revision: d.Revision, ClaimTimeout: max(d.Planning.ClaimTimeout, 0)}
}

// foldPlanClaimWait records a planner's claim of the plan revision a live
// run waits for. A critique's claim (Step set) is not a plan's.
func foldPlanClaimWait(s *State, ev event.Event) {
	var d event.PlanClaimedData
	if ev.Decode(&d) != nil || d.Step != "" {
		return
	}
	r := s.Runs[ev.Run]
	if r == nil || r.Terminal() || max(d.Revision, 1) != r.awaitedRevision() {
		return
	}
	w := r.Awaiting
	if w == nil || w.Revision != max(d.Revision, 1) {
		w = &PlannerWait{Revision: max(d.Revision, 1)}
		r.Awaiting = w
	}
	if d.Until.After(w.Until) {
		w.Until = d.Until
	}
}

// foldReplanWait starts the wait for the revision a replan request asks
// for (after foldReplanRequested took it).
func foldReplanWait(s *State, ev event.Event) {
	r := s.Runs[ev.Run]
	if r == nil || r.Replanning == nil || (r.Awaiting != nil && r.Awaiting.Revision == r.Replanning.Revision) {
		return
	}
	r.Awaiting = &PlannerWait{Revision: r.Replanning.Revision, Since: ev.Time}
}

// awaitedRevision is the plan revision r waits for from a planner: 1 for
// a submitted run, the one asked for while it replans and nothing was
// proposed or rejected yet; 0 when it waits for none.
func (r *Run) awaitedRevision() int {
	switch {
	case r.Status == RunSubmitted:
		return 1
	case r.Replanning != nil && r.Replanning.Next == nil && r.Replanning.Rejected == "":
		return r.Replanning.Revision
	}
	return 0
}

// awaitPlanner fails r with CodeNoPlanner when it has waited for a
// planner to answer NoPlannerAfter (rev is the revision it waits for,
// since when it began to), and wakes Decide then otherwise. It reports
// whether it stopped the run.
func (d *decider) awaitPlanner(r *Run, rev int, since time.Time, failed *Step) bool {
	// A new leader gives the planners a whole wait from its election: a
	// cluster restarted after a while does not fail every goal submitted
	// before at once, ahead of its planners' first claims.
	start := latest(since, d.s.ElectedAt)
	if w := r.Awaiting; w != nil && w.Revision == rev && w.Until.After(start) {
		start = w.Until
	}
	timeout := d.s.claimTimeout()
	due := start.Add(NoPlannerAfter(timeout))
	if d.now.Before(due) {
		d.wakeAt(due)
		return false
	}
	what := "the goal"
	if failed != nil {
		what = fmt.Sprintf("the request for plan revision %d", rev)
	}
	reason := fmt.Sprintf("no planner answered %s within %s (the claim timeout %s and a margin): is a node with the planner role running?",
		what, NoPlannerAfter(timeout), timeout)
	if failed == nil {
		d.finish(r, RunFailed, CodeNoPlanner, reason)
	} else {
		d.stopRun(r, RunFailed, CodeNoPlanner, fmt.Sprintf("step %s failed: %s; %s", failed.Spec.ID, failed.Error, reason))
	}
	return true
}

// awaitFirstPlan applies the no-planner rule to a submitted run.
func (d *decider) awaitFirstPlan(r *Run) { d.awaitPlanner(r, 1, r.CreatedAt, nil) }

// awaitReplan applies the no-planner rule to a run that asked for a
// replan because st failed, while nothing was proposed or rejected; it
// reports whether it stopped the run. A wait without its start (a run
// whose request this fold did not see begin) is left alone.
func (d *decider) awaitReplan(r *Run, st *Step) bool {
	rev := r.awaitedRevision()
	w := r.Awaiting
	if rev == 0 || w == nil || w.Revision != rev || w.Since.IsZero() {
		return false
	}
	return d.awaitPlanner(r, rev, w.Since, st)
}

// foldReplanNoPlanner keeps the code of a planner's no_planner rejection
// of the replan a run waits for (after foldPlanRejected recorded it).
func foldReplanNoPlanner(s *State, ev event.Event) {
	var d event.PlanRejectedData
	if ev.Decode(&d) != nil || d.Code != event.NoPlanner {
		return
	}
	r := s.Runs[ev.Run]
	if r == nil || r.Replanning == nil || r.Replanning.Rejected != d.Error || r.Awaiting == nil ||
		r.Awaiting.Revision != r.Replanning.Revision || r.Awaiting.Rejected != "" {
		return
	}
	r.Awaiting.Rejected = CodeNoPlanner
}

// replanRejectedCode is the run code of a replan the planner rejected.
func (r *Run) replanRejectedCode() Code {
	if w := r.Awaiting; w != nil && r.Replanning != nil && w.Revision == r.Replanning.Revision && w.Rejected != "" {
		return w.Rejected
	}
	return CodePlanRejected
}

// rejectionCode is the run code of a planner's plan.rejected: no_planner
// when the planner said none could plan the goal, plan_rejected otherwise.
func rejectionCode(wire string) Code {
	if wire == event.NoPlanner {
		return CodeNoPlanner
	}
	return CodePlanRejected
}
