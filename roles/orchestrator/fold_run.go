package orchestrator

import "github.com/agentic-dev/agentic/bus/event"

// foldRunFinished closes a run: its final status and reason as decided, and
// every step not yet final becomes cancelled.
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
	r.Reason = d.Reason
	r.FinishedAt = ev.Time
	for i, st := range r.Steps {
		if !st.Terminal() && s.setStepStatus(r, i, StepCancelled) {
			st.FinishedAt = ev.Time
		}
	}
}
