package core

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
)

// MaxOpenRevisions caps the plan revisions of a run whose plan is open
// (event.Plan.Open, the planner's ReAct mode): a model that never closes
// its plan ends the run, failed with CodeBudgetExceeded, once revision
// MaxOpenRevisions is final. The policy's budgets bound it sooner:
// budgets.steps (every revision keeps the steps before it),
// budgets.run_time, and budgets.llm_tokens, which the planner enforces.
const MaxOpenRevisions = 50

// Bounds of the observations a next request carries (Results): each
// step's output tail is cut to its end, and the tails of the oldest steps
// are left out once they add up to maxResultTails.
const (
	maxResultTail  = 2 << 10
	maxResultTails = 64 << 10
)

// next decides for a running run every step of which is final and done
// (Decide would finish it): when its plan is open, it asks the planner
// for the next revision (plan.replan_requested, reason next, with the
// steps' results), accepts the revision proposed, or fails the run when
// the planner rejected it or the run reached MaxOpenRevisions. A request
// for the next revision does not count against the replans budget. It
// reports false for a run whose plan is not open: that run finishes.
func (d *decider) next(r *Run) bool {
	if !r.Open {
		return false
	}
	rp := r.Replanning
	switch {
	case rp == nil && r.Revision >= MaxOpenRevisions:
		d.stopRun(r, RunFailed, CodeBudgetExceeded, fmt.Sprintf(
			"the plan is still open after %d revisions, the most a run planned a step at a time may have", MaxOpenRevisions))
	case rp == nil:
		d.requestReplan(r, d.nextRequest(r)) // replan.go
	case rp.Rejected != "":
		d.stopRun(r, RunFailed, CodePlanRejected, fmt.Sprintf("plan revision %d (the next step) rejected: %s", rp.Revision, rp.Rejected))
	case rp.Next == nil:
		// Waiting for the planner.
	default:
		d.acceptRevision(r, rp)
	}
	return true
}

// nextRequest is the plan.replan_requested payload asking for the next
// revision of run r's open plan: the plan in force, the steps done and
// every final step's result (the observations), in plan order.
func (d *decider) nextRequest(r *Run) event.PlanReplanRequestedData {
	req := event.PlanReplanRequestedData{
		Decision: d.decision(), Revision: r.Revision, Replans: r.Replans, Tokens: r.Tokens,
		Goal: event.GoalSubmittedData{Goal: r.Goal, Text: r.Text}, Source: r.Source,
		Plan:   event.Plan{Goal: r.Goal, Subgoals: r.Subgoals, Open: true},
		Reason: event.ReplanNext,
	}
	req.Plan.Steps, req.Done = r.planInForce()
	for _, st := range r.Steps {
		if st.Compensates != nil || !st.Terminal() {
			continue
		}
		res := event.StepResult{Step: st.Spec.ID, Status: event.StepStatus(st.Status), Reason: st.Error, OutputTail: st.Tail}
		if st.ExitCode != nil {
			res.ExitCode = *st.ExitCode
		}
		if len(res.OutputTail) > maxResultTail {
			res.OutputTail = "..." + res.OutputTail[len(res.OutputTail)-maxResultTail:]
		}
		req.Results = append(req.Results, res)
	}
	total := 0
	for i := len(req.Results) - 1; i >= 0; i-- { // the newest observations matter most
		if total += len(req.Results[i].OutputTail); total > maxResultTails {
			req.Results[i].OutputTail = ""
		}
	}
	return req
}

// observe keeps the output tail of a step of an open plan that succeeded
// or was skipped: the next revision is planned from it (nextRequest). A
// failed attempt's tail is kept for every plan.
func observe(r *Run, st *Step, tail string) {
	if r.Open {
		st.Tail = tail
	}
}

// keepFinal reports whether a revision of run r keeps step o, when it
// keeps its spec, as it is although o did not succeed: in an open plan a
// step that failed and let the run go on (on_failure continue) is an
// observation, not work to do again.
func keepFinal(r *Run, o *Step) bool { return r.Open && o.Status == StepFailed && o.Done() }

// waitsForNext reports whether run r waits for the next revision of its
// open plan (not for a revision after a failure).
func (r *Run) waitsForNext() bool {
	if !r.Open || r.Replanning == nil {
		return false
	}
	for _, st := range r.Steps {
		if st.Status == StepFailed && st.Replan {
			return false
		}
	}
	return true
}
