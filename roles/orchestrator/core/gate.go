package core

import (
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Gate is an open gate: what holds a step until operators answer. A step
// the policy judged confirm is gated (gate.opened, kind policy); a step in
// needs-decision holds a gate of kind needs-decision, opened by the fold
// that put it there.
type Gate struct {
	Kind event.GateKind `json:"kind"`
	// Number is the gate's number among the step's gates (Step.Gates).
	Number int `json:"number"`
	// Subject is what an answer must name (event.GateSubject of the step
	// and the policy judged with; for needs-decision, of the step alone).
	Subject string `json:"subject"`
	// Attempt is the attempt the gate precedes (policy) or holds
	// (needs-decision).
	Attempt int             `json:"attempt,omitempty"`
	Policy  event.PolicyRef `json:"policy,omitzero"`
	Verdict *event.Verdict  `json:"verdict,omitempty"`
	// Memory are the step's memory references as the gate judged them:
	// the gate shows the step with them applied (memoryref.go).
	Memory []event.MemoryValue `json:"memory,omitempty"`
	// Approvals is how many distinct operators must accept; Approvers
	// those who have, in order.
	Approvals    int       `json:"approvals"`
	Approvers    []string  `json:"approvers,omitempty"`
	NotSubmitter bool      `json:"not_submitter,omitempty"`
	Opened       time.Time `json:"opened"`
	// Expires is when Decide closes the gate with OnExpiry (zero: never).
	Expires  time.Time        `json:"expires,omitzero"`
	OnExpiry event.GateAction `json:"on_expiry,omitempty"`
	// Reason says why the step is held, for people.
	Reason string `json:"reason,omitempty"`
	// ToolHash, for a tool step, is the hash of the pinned definition
	// the gate was judged with; Subject binds it (tools.go).
	ToolHash string `json:"tool_hash,omitempty"`
}

// ReasonGated is the error of a gated step, before the verdict's why.
const ReasonGated = "waiting for approval (agentctl gate approve|edit|skip|deny)"

// foldGateOpened holds a pending step at a gate, or fails it at once when
// the verdict is deny (a gate that opens closed: the step never runs, and
// the ledger records why). It is ignored unless the run goes on (running
// or paused), the step is pending and waits for exactly the gate's
// attempt, the gate is judged with the policy in force and its subject is
// the step's. The gate needs at least the approvals the policy's own
// verdict asks (the fold judges the step too), so no leader can ask less.
func foldGateOpened(s *State, ev event.Event) {
	var d event.GateOpenedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	if d.Kind == event.GatePlan && d.Step == "" {
		if r := s.Runs[ev.Run]; r != nil {
			foldPlanGateOpened(s, r, d, ev.Time)
		} else {
			s.Ignored++
		}
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st == nil || !r.goesOn() || st.Status != StepPending || d.Attempt != st.Attempt+1 ||
		d.Kind != event.GatePolicy || d.Verdict == nil || s.Policy == nil || d.Policy != s.Policy.Ref() ||
		d.ToolHash != s.toolHash(st.Spec) || d.Subject != event.ToolGateSubject(resolvedSpec(st, d.Memory), d.Policy, d.ToolHash) {
		s.Ignored++
		return
	}
	// The gate needs what the policy in force says, whatever the leader
	// wrote: a deny is a deny, and no fewer approvers. A step that reads
	// memory is judged with the values the gate recorded (memoryref.go).
	v := s.judge(resolvedSpec(st, d.Memory), d.Subject)
	approvals, notSubmitter := max(d.Approvals, v.Approvals, 1), d.NotSubmitter || v.NotSubmitter
	st.Gates++
	if d.Verdict.Action == "deny" || v.Action == policy.Deny {
		if !s.setStepStatus(r, i, StepFailed) {
			return
		}
		st.FinishedAt = ev.Time
		why := d.Verdict.Why
		if v.Action == policy.Deny {
			why = v.Why
		}
		st.Error, st.Code, st.Class = "denied by policy: "+why, CodePolicyDenied, event.ClassPolicy
		s.failed(r, i, st.Attempt, false, ev.Time)
		return
	}
	if !s.setStepStatus(r, i, StepGated) {
		return
	}
	st.Gate = &Gate{Kind: d.Kind, Number: st.Gates, Subject: d.Subject, Attempt: d.Attempt, Policy: d.Policy,
		Verdict: d.Verdict, Memory: d.Memory, Approvals: approvals, NotSubmitter: notSubmitter, Opened: ev.Time,
		Expires: d.Expires, OnExpiry: d.OnExpiry, Reason: d.Verdict.Why, ToolHash: d.ToolHash}
	st.Error, st.Code, st.Class = ReasonGated+": "+d.Verdict.Why, "", ""
	s.setWait(r, i)
}

// foldGateDecided applies one operator's answer to a step's open gate
// (policy or needs-decision). An accept with remember on a policy gate of
// a shell step asks the leader to add the narrowest allow rule of its
// command to the policy (Step.Remember). The envelope lets only operators sign it.
// It counts only while it names the gate's current subject; an accept
// counts once per operator, and not from the run's submitter when the gate
// says NotSubmitter. Once the gate has its approvals the step is pending
// again, its approval recorded (Approved, Approvers): Decide assigns it,
// or — a needs-decision gate — runs it again. An edit replaces a shell
// step's command (both recorded) and makes it pending, to be judged
// again; skip skips it (its dependents run); deny fails it with class
// policy, code gate_denied. Anything else is ignored and counted.
func foldGateDecided(s *State, ev event.Event) {
	var d event.GateDecidedData
	if !s.decode(ev, &d) {
		return
	}
	foldGateAnswer(s, ev, d, ev.Node)
}

// foldGateDecidedFor folds an operator's answer a ui node signed on their
// behalf: the operator it names is the approver, as if they had signed it.
func foldGateDecidedFor(s *State, ev event.Event) {
	var d event.GateDecidedForData
	if !s.decode(ev, &d) {
		return
	}
	if d.Operator == "" {
		s.Ignored++
		return
	}
	foldGateAnswer(s, ev, d.GateDecidedData, d.Operator)
}

// foldGateAnswer folds answer d to a gate of ev's run, given by operator
// by.
func foldGateAnswer(s *State, ev event.Event, d event.GateDecidedData, by string) {
	if d.Step == "" {
		if r := s.Runs[ev.Run]; r != nil && r.goesOn() {
			foldPlanGateDecided(s, r, d, by)
		} else {
			s.Ignored++
		}
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st == nil || !r.goesOn() || st.Gate == nil || d.Subject != st.Gate.Subject || by == "" {
		s.Ignored++
		return
	}
	g := st.Gate
	switch d.Action {
	case event.GateAccept:
		if (g.NotSubmitter && by == r.Submitter) || slices.Contains(g.Approvers, by) {
			s.Ignored++
			return
		}
		g.Approvers = append(g.Approvers, by)
		if d.Remember && g.Kind == event.GatePolicy && st.Spec.Kind == event.KindShell {
			st.Remember = by
		}
		s.touchStep(r, i)
		if len(g.Approvers) < g.Approvals {
			return
		}
		approvers := g.Approvers
		kind := g.Kind
		if !s.setStepStatus(r, i, StepPending) {
			return
		}
		st.Error, st.Code, st.Class = "", "", ""
		if kind == event.GateNeedsDecision {
			st.NotBefore, st.ReadyAt = time.Time{}, ev.Time
			st.Next = "retry accepted by " + by
			if d.Reason != "" {
				st.Next += ": " + d.Reason
			}
		} else {
			st.Approved, st.Approvers = d.Subject, approvers
		}
		s.setWait(r, i)
	case event.GateEdit:
		if d.Command == "" || st.Spec.Kind != event.KindShell || d.Command == st.Spec.Run {
			s.Ignored++
			return
		}
		kind := g.Kind
		if !s.setStepStatus(r, i, StepPending) {
			return
		}
		st.Edits = append(st.Edits, Edit{From: st.Spec.Run, To: d.Command, By: by, At: ev.Time})
		st.Spec.Run = d.Command
		st.Approved, st.Approvers = "", nil
		st.Error, st.Code, st.Class = "", "", ""
		if kind == event.GateNeedsDecision {
			st.NotBefore, st.ReadyAt = time.Time{}, ev.Time
			st.Next = "command edited by " + by
		}
		s.setWait(r, i)
	case event.GateSkip:
		s.gateSkip(r, i, ev.Time, CodeSkippedByOperator, "skipped by "+by, d.Reason)
	case event.GateDeny:
		s.gateDeny(r, i, ev.Time, CodeGateDenied, "denied by "+by, d.Reason)
	default:
		s.Ignored++
	}
}

// foldGateClosed closes a gate nobody answered: the step is skipped or
// denied as the gate's OnExpiry said. Ignored unless it names the open
// gate's subject.
func foldGateClosed(s *State, ev event.Event) {
	var d event.GateClosedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	if d.Step == "" {
		if r := s.Runs[ev.Run]; r != nil && r.goesOn() {
			foldPlanGateClosed(s, r, d)
		} else {
			s.Ignored++
		}
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st == nil || !r.goesOn() || st.Gate == nil || d.Subject != st.Gate.Subject {
		s.Ignored++
		return
	}
	code := codeFromWire(d.Code)
	switch d.Action {
	case event.GateSkip:
		s.gateSkip(r, i, ev.Time, code, "gate closed", d.Reason)
	case event.GateDeny:
		s.gateDeny(r, i, ev.Time, code, "gate closed", d.Reason)
	default:
		s.Ignored++
	}
}

// gateSkip ends step i skipped at t: its dependents run.
func (s *State) gateSkip(r *Run, i int, t time.Time, code Code, what, reason string) {
	st := r.Steps[i]
	if !s.setStepStatus(r, i, StepSkipped) {
		return
	}
	st.FinishedAt = t
	st.Error, st.Code, st.Class = withReason(what, reason), code, ""
	s.stepDone(r, i, t)
}

// gateDeny fails step i at t with class policy, never retried: the run
// fails unless the step's on_failure is continue.
func (s *State) gateDeny(r *Run, i int, t time.Time, code Code, what, reason string) {
	st := r.Steps[i]
	if !s.setStepStatus(r, i, StepFailed) {
		return
	}
	st.FinishedAt = t
	st.Error, st.Code, st.Class = withReason(what, reason), code, event.ClassPolicy
	s.failed(r, i, st.Attempt, false, t)
}

func withReason(what, reason string) string {
	if reason == "" {
		return what
	}
	return what + ": " + reason
}

// holdForDecision opens the needs-decision gate of step i, which the fold
// just put in needs-decision at t.
func (s *State) holdForDecision(r *Run, i int, t time.Time) {
	st := r.Steps[i]
	st.Gates++
	st.Gate = &Gate{Kind: event.GateNeedsDecision, Number: st.Gates, Subject: event.GateSubject(st.Spec, event.PolicyRef{}),
		Attempt: st.Attempt, Approvals: 1, Opened: t, Reason: st.Error}
}

// foldRunPause pauses a running run: Decide gives it no new assignment
// (nor a gate); its running steps finish.
func foldRunPause(s *State, ev event.Event) {
	var d event.RunBrakeData
	_ = ev.Decode(&d) // the reason is optional
	pauseRun(s, ev, d, ev.Node)
}

// foldRunPausedFor folds an operator's pause a ui node signed on their
// behalf, as that operator's run.pause.
func foldRunPausedFor(s *State, ev event.Event) {
	var d event.RunBrakeForData
	if !s.decode(ev, &d) {
		return
	}
	if d.Operator == "" {
		s.Ignored++
		return
	}
	pauseRun(s, ev, d.RunBrakeData, d.Operator)
}

// pauseRun folds a pause of ev's run, asked by operator by.
func pauseRun(s *State, ev event.Event, d event.RunBrakeData, by string) {
	r := s.Runs[ev.Run]
	if r == nil || r.Status != RunRunning || r.CancelRequested {
		s.Ignored++
		return
	}
	if !s.setRunStatus(r, RunPaused) {
		return
	}
	r.PauseReason = withReason("paused by "+by, d.Reason)
	for i := range r.Steps {
		if r.Steps[i].Status == StepPending {
			s.touchStep(r, i) // no longer shows as ready
		}
	}
}

// foldRunResume lets a paused run be scheduled again.
func foldRunResume(s *State, ev event.Event) { resumeRun(s, ev) }

// foldRunResumedFor folds an operator's resume a ui node signed on their
// behalf, as that operator's run.resume.
func foldRunResumedFor(s *State, ev event.Event) {
	var d event.RunBrakeForData
	if !s.decode(ev, &d) {
		return
	}
	if d.Operator == "" {
		s.Ignored++
		return
	}
	resumeRun(s, ev)
}

// resumeRun folds a resume of ev's run.
func resumeRun(s *State, ev event.Event) {
	r := s.Runs[ev.Run]
	if r == nil || r.Status != RunPaused {
		s.Ignored++
		return
	}
	if !s.setRunStatus(r, RunRunning) {
		return
	}
	r.Resumes++
	r.PauseReason = ""
	for i := range r.Steps {
		if r.Steps[i].Status == StepPending {
			s.touchStep(r, i) // shows as ready again
		}
	}
}

// goesOn reports whether the run is running or paused: its steps may
// still change at operators' word.
func (r *Run) goesOn() bool { return r.Status == RunRunning || r.Status == RunPaused }
