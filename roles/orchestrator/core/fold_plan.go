package core

import (
	"github.com/agentic-dev/agentic/bus/event"
)

// foldPlanProposed stores a plan revision for a submitted run, or replaces
// the plan of a planned (not yet accepted) run with a newer revision.
// A proposal for a running run is the revision it waits for after a step
// asked for a replan (held until accepted), or ignored.
func foldPlanProposed(s *State, ev event.Event) {
	var d event.PlanProposedData
	if !s.decode(ev, &d) {
		return
	}
	r := s.Runs[ev.Run]
	if r != nil && d.Planner != nil && !r.Terminal() {
		r.Tokens += d.Planner.PromptTokens + d.Planner.CompletionTokens
	}
	if r != nil && proposeReplan(s, r, d) {
		return
	}
	if r == nil || (r.Status == RunPlanned && d.Revision <= r.Revision) {
		s.Ignored++
		return
	}
	planRun(s, r, d.Revision, d.Source, d.Plan)
}

// planRun stores revision rev of r's plan, from source: r becomes planned
// with p's steps, all pending.
func planRun(s *State, r *Run, rev int, source string, p event.Plan) {
	if !s.setRunStatus(r, RunPlanned) {
		return
	}
	r.Revision = rev
	r.Source = source
	r.Subgoals = p.Subgoals
	r.Open = p.Open // react.go
	r.Steps = make([]*Step, len(p.Steps))
	for i, spec := range p.Steps {
		s.Tuning.StepDefaults(p.Family, &spec) // tuning.go
		r.Steps[i] = &Step{Spec: spec, Status: StepPending}
	}
	r.Invalid = r.buildIndex()
	s.touchPlan(r)
	for i := range r.Steps {
		s.setWait(r, i)
	}
}

// foldPlanRejected fails a run the planner could not plan: one that is not
// running yet. For a run waiting for a replan it records the rejection,
// and Decide fails the run (stopping what runs).
func foldPlanRejected(s *State, ev event.Event) {
	var d event.PlanRejectedData
	if !s.decode(ev, &d) {
		return
	}
	r := s.Runs[ev.Run]
	if r != nil && d.Planner != nil && !r.Terminal() {
		r.Tokens += d.Planner.PromptTokens + d.Planner.CompletionTokens
	}
	if r != nil && (r.Status == RunRunning || r.Status == RunPaused) && rejectReplan(s, r, d) {
		return
	}
	if r == nil || !r.Status.CanMove(RunPlanned) {
		s.Ignored++ // unknown, or past planning
		return
	}
	if !s.setRunStatus(r, RunFailed) { // no step shows otherwise: "ready" is shown only while running
		return
	}
	r.Reason, r.Code = "plan rejected: "+d.Error, rejectionCode(d.Code)
	r.FinishedAt = ev.Time
}

// foldPlanAccepted starts a planned run whose revision matches. Steps
// without dependencies become ready at the time of acceptance. For a run
// waiting for a replan it replaces the plan with the proposed revision
// (acceptReplan).
func foldPlanAccepted(s *State, ev event.Event) {
	var d event.PlanAcceptedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	r := s.Runs[ev.Run]
	if r != nil && (r.Status == RunRunning || r.Status == RunPaused) && acceptReplan(s, r, d, ev.Time) {
		return
	}
	if r == nil || r.Status != RunPlanned || r.Revision != d.Revision {
		s.Ignored++
		return
	}
	if !s.setRunStatus(r, RunRunning) {
		return
	}
	for i, st := range r.Steps {
		if st.Status == StepPending && r.depsDone(i) {
			st.ReadyAt = ev.Time
			s.touchStep(r, i) // shows as ready now
		}
	}
}
