package orchestrator

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// foldTaskAssigned gives the next attempt of a pending step to a node. It is
// ignored (a duplicate or a decision overtaken by events) unless the run is
// running, the step is pending and the attempt is the step's next one.
func foldTaskAssigned(s *State, ev event.Event) {
	var d event.TaskAssignedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step.ID)
	if st == nil || r.Status != RunRunning || d.Attempt != st.Attempt+1 || d.Node == "" {
		s.Ignored++
		return
	}
	if !s.setStepStatus(r, i, StepAssigned) {
		return
	}
	st.Attempt = d.Attempt
	st.Node = d.Node
	st.StartedAt, st.FinishedAt = time.Time{}, time.Time{}
	st.ExitCode, st.Error, st.Code, st.Class = nil, "", "", ""
}

// foldTaskStarted marks the current attempt running.
func foldTaskStarted(s *State, ev event.Event) {
	var d event.TaskStartedData
	if !s.decode(ev, &d) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if !s.currentAttempt(st, d.Attempt, signer(ev, d.Node)) {
		return
	}
	if !s.taskMay(st, TaskRunning) || !s.setStepStatus(r, i, StepRunning) {
		return
	}
	st.StartedAt = ev.Time
}

// foldTaskCancel records that the leader asked a node to stop an attempt, so
// the request is not repeated (a second request for the attempt is
// ignored). The step's status changes only when the executor reports the
// attempt's end or the run finishes.
func foldTaskCancel(s *State, ev event.Event) {
	var d event.TaskCancelData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	_, _, st := s.step(ev.Run, d.Step)
	if st == nil || d.Attempt != st.Attempt || !st.Active() || st.CancelSent == d.Attempt {
		s.Ignored++
		return
	}
	st.CancelSent = d.Attempt
}

// currentAttempt reports whether an executor's report about attempt from
// node concerns the step's current attempt on that node. Reports for an
// older attempt are counted as superseded, other mismatches as ignored.
func (s *State) currentAttempt(st *Step, attempt int, node string) bool {
	switch {
	case st == nil:
		s.Ignored++
	case attempt < st.Attempt:
		s.Superseded++
	case attempt > st.Attempt || node != st.Node || !st.Active():
		s.Ignored++
	default:
		return true
	}
	return false
}

// signer is the node an executor report comes from: the authenticated
// signer, or the payload's node for events that carry none.
func signer(ev event.Event, payloadNode string) string {
	if ev.Node != "" {
		return ev.Node
	}
	return payloadNode
}
