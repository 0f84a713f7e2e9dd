package orchestrator

import "github.com/agentic-dev/agentic/bus/event"

// foldRunFinished closes a run: its status and reason as decided, and every
// step not yet final becomes cancelled.
func foldRunFinished(s *State, ev event.Event) {
	var d event.RunFinishedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	r := s.Runs[ev.Run]
	if r == nil || r.Terminal() {
		s.Ignored++
		return
	}
	switch d.Status {
	case event.RunSucceeded, event.RunFailed, event.RunCancelled:
	default:
		s.Ignored++
		return
	}
	r.Status = d.Status
	r.Reason = d.Reason
	r.FinishedAt = ev.Time
	s.touch(r)
	for i, st := range r.Steps {
		if !st.Terminal() {
			st.Status = StepCancelled
			st.FinishedAt = ev.Time
			s.touchStep(r, i)
		}
	}
}
