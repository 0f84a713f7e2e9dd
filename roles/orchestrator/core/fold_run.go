package core

import "github.com/agentic-dev/agentic/bus/event"

// foldRunFinished closes a run: its final status, reason and code as
// decided, and every step not yet final becomes cancelled, with the code
// that says why (endCodes).
func foldRunFinished(s *State, ev event.Event) {
	var d event.RunFinishedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	r := s.Runs[ev.Run]
	to, ok := runStatusFromWire(d.Status)
	if r == nil || !ok || !to.Terminal() {
		s.Ignored++
		return
	}
	if !s.setRunStatus(r, to) {
		return
	}
	r.Reason, r.Code = d.Reason, codeFromWire(d.Code)
	r.FinishedAt = ev.Time
	codes := endCodes(r)
	for i, st := range r.Steps {
		if !st.Terminal() && s.setStepStatus(r, i, StepCancelled) {
			st.FinishedAt = ev.Time
			st.Code = codes[i]
		}
	}
}

// endCodes gives each step that its run's end cancels (in plan order, which
// is topological) its code: dependency_failed when a step it depends on,
// directly or not, ended without being done; otherwise
// cancelled_by_operator when the run was cancelled, run_ended when it
// failed.
func endCodes(r *Run) []Code {
	codes := make([]Code, len(r.Steps))
	blocked := make([]bool, len(r.Steps))
	for i, st := range r.Steps {
		for _, j := range r.deps[i] {
			if j >= 0 && (blocked[j] || (r.Steps[j].Terminal() && !r.Steps[j].Done())) {
				blocked[i] = true
			}
		}
		switch {
		case st.Terminal():
		case blocked[i]:
			codes[i] = CodeDependencyFailed
		case r.Status == RunCancelled:
			codes[i] = CodeCancelledByOperator
		default:
			codes[i] = CodeRunEnded
		}
	}
	return codes
}
