package core

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// ReasonNeedsDecision ends the error of a step held in needs-decision.
const ReasonNeedsDecision = "not idempotent and may have started: held for an operator (agentctl step retry|skip)"

// foldTaskAssigned gives the next attempt of a pending step to a node. It is
// ignored (a duplicate or a decision overtaken by events) unless the run is
// running (not paused), the step is pending, the attempt is the step's
// next one and the policy in force admits it (admitted).
func foldTaskAssigned(s *State, ev event.Event) {
	var d event.TaskAssignedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) || (d.Compensates != nil && !s.addCompensation(ev.Run, d)) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step.ID)
	if st == nil || r.Status != RunRunning || d.Attempt != st.Attempt+1 || d.Node == "" || !st.Status.CanMove(StepAssigned) ||
		!s.admitted(st, d) {
		s.Ignored++
		return
	}
	st.Node = d.Node // before the move, which files the attempt under its node
	if !s.setStepStatus(r, i, StepAssigned) {
		return
	}
	st.Attempt = d.Attempt
	st.AssignedSeq, st.SlotAt, st.Next = ev.Seq, time.Time{}, ""
	s.setWait(r, i) // no longer pending: no wait
	st.StartedAt, st.FinishedAt = time.Time{}, time.Time{}
	st.ExitCode, st.Error, st.Code, st.Class = nil, "", "", ""
}

// admitted reports whether an assignment may run the step under the
// policy in force: it names that policy, and either carries the step's
// recorded approval of exactly its subject or the policy allows the step;
// nothing admits a step the policy denies.
// Before the ledger holds a policy (histories older than policies) every
// assignment is admitted.
func (s *State) admitted(st *Step, d event.TaskAssignedData) bool {
	if s.Policy == nil {
		return true
	}
	ref := s.Policy.Ref()
	if d.Policy != ref {
		return false
	}
	spec := resolvedSpec(st, d.Memory) // memoryref.go
	if d.ToolHash != s.toolHash(spec) {
		return false // judged with another definition than the one pinned now (tools.go)
	}
	subject := event.ToolGateSubject(spec, ref, d.ToolHash)
	switch v := s.judge(spec, subject); {
	case v.Action == policy.Deny:
		return false // no approval overrides a deny
	case d.Approved != "":
		return d.Approved == st.Approved && d.Approved == subject
	default:
		return v.Action == policy.Allow
	}
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
// ignored). For a run that ends, the step's status changes only when the
// executor reports the attempt's end or the run finishes. A cancel with
// code superseded gives the attempt up at once (supersede).
func foldTaskCancel(s *State, ev event.Event) {
	var d event.TaskCancelData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st == nil || d.Attempt != st.Attempt || !st.Active() || st.CancelSent == d.Attempt {
		s.Ignored++
		return
	}
	st.CancelSent = d.Attempt
	if codeFromWire(d.Code) == CodeSuperseded {
		s.supersede(r, i, ev.Time, d.Reason)
	}
}

// supersede gives up the current attempt of step i of r, active, at t for
// reason: reports about it are superseded from now on. A step that is
// idempotent, or whose attempt never started, becomes pending again — its
// next attempt is due at once, with reason — and one that is not
// idempotent and may have started (it runs, or its node had a slot free
// for it: SlotAt) goes to needs-decision until an operator decides.
// Neither counts against the step's retries.
func (s *State) supersede(r *Run, i int, t time.Time, reason string) {
	st := r.Steps[i]
	code := s.lossCode(st)
	mayHaveStarted := st.Status == StepRunning || !st.SlotAt.IsZero()
	to := StepPending
	if mayHaveStarted && !Idempotent(st.Spec) {
		to = StepNeedsDecision
	}
	if !s.setStepStatus(r, i, to) {
		return
	}
	st.Lost = st.Attempt
	st.Reassigned++
	st.Error, st.Code, st.Class = reason, code, ""
	if to == StepNeedsDecision {
		st.Error = reason + ": " + ReasonNeedsDecision
		s.holdForDecision(r, i, t)
		return
	}
	st.NotBefore, st.ReadyAt, st.Next = time.Time{}, t, reason
	s.setWait(r, i)
}

// lossCode says why the current attempt of st is given up, from what the
// state holds of its node.
func (s *State) lossCode(st *Step) Code {
	ex := s.Executors[st.Node]
	switch {
	case ex == nil || ex.Gone != "":
		return CodeNodeLost
	case ex.Draining && st.Status == StepAssigned && st.SlotAt.IsZero():
		return CodeNodeDraining
	}
	return CodeNotStarted
}

// currentAttempt reports whether an executor's report about attempt from
// node concerns the step's current attempt on that node. Reports for an
// older attempt, or for an attempt given up, are counted as superseded,
// other mismatches as ignored.
func (s *State) currentAttempt(st *Step, attempt int, node string) bool {
	switch {
	case st == nil:
		s.Ignored++
	case attempt < st.Attempt || (attempt == st.Lost && attempt > 0):
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
