package core

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// foldStepDecided applies an operator's decision on a step held in
// needs-decision (the older form of gate.decided on its gate, kept as an
// alias): retry makes it pending, its next attempt due at once;
// skip ends it skipped (code skipped_by_operator), and its dependents run.
// A decision on any other step — not held, unknown, in a run that is not
// running — or with an unknown action is ignored and counted.
func foldStepDecided(s *State, ev event.Event) {
	var d event.StepDecidedData
	if !s.decode(ev, &d) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st == nil || !r.goesOn() || st.Status != StepNeedsDecision {
		s.Ignored++
		return
	}
	switch d.Action {
	case event.StepRetry:
		if !s.setStepStatus(r, i, StepPending) {
			return
		}
		st.NotBefore, st.ReadyAt = time.Time{}, ev.Time
		st.Next = "retry decided by an operator"
		if d.Reason != "" {
			st.Next += ": " + d.Reason
		}
		s.setWait(r, i)
	case event.StepSkip:
		if !s.setStepStatus(r, i, StepSkipped) {
			return
		}
		st.FinishedAt = ev.Time
		st.Error, st.Code, st.Class = "skipped by an operator", CodeSkippedByOperator, ""
		if d.Reason != "" {
			st.Error += ": " + d.Reason
		}
		s.stepDone(r, i, ev.Time)
	default:
		s.Ignored++
	}
}
