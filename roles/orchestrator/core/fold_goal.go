package core

import "github.com/agentic-dev/agentic/bus/event"

// foldGoalSubmitted starts a run. A second goal.submitted for a live run is
// a duplicate and ignored (the ledger refuses one for any run it holds).
func foldGoalSubmitted(s *State, ev event.Event) {
	var d event.GoalSubmittedData
	if !s.decode(ev, &d) {
		return
	}
	if ev.Run == "" || s.Runs[ev.Run] != nil {
		s.Ignored++
		return
	}
	r := &Run{
		ID:        ev.Run,
		Goal:      d.Goal,
		Text:      d.Text,
		Status:    RunSubmitted,
		Order:     s.NextOrder,
		CreatedAt: ev.Time,
		Submitter: ev.Node,
	}
	r.buildIndex()
	s.NextOrder++
	s.Runs[r.ID] = r
	s.touch(r)
	if p := goalPlan(d); p != nil {
		planRun(s, r, 1, FileSource, *p) // goalplan.go
	}
}

// foldRunCancel records an operator's request to cancel a run; Decide turns
// it into task.cancel and run.finished decisions.
func foldRunCancel(s *State, ev event.Event) {
	var d event.RunCancelData
	if len(ev.Data) > 0 && !s.decode(ev, &d) {
		return
	}
	cancelRun(s, ev, d)
}

// foldRunCancelRequestedFor folds an operator's cancel a ui node signed on
// their behalf, as that operator's run.cancel.
func foldRunCancelRequestedFor(s *State, ev event.Event) {
	var d event.RunCancelForData
	if !s.decode(ev, &d) {
		return
	}
	if d.Operator == "" {
		s.Ignored++
		return
	}
	cancelRun(s, ev, d.RunCancelData)
}

// cancelRun records a request to cancel ev's run.
func cancelRun(s *State, ev event.Event, d event.RunCancelData) {
	r := s.Runs[ev.Run]
	if r == nil || r.Terminal() || r.CancelRequested {
		s.Ignored++
		return
	}
	r.CancelRequested = true
	r.CancelReason = d.Reason
}
