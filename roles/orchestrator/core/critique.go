package core

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Critique steps (kind critique, protocol version 6) run nothing on an
// executor: a model judges whether the output of the step they target
// meets their criteria.
//
//   - Decide: a ready critique step (pending, NotBefore reached, every
//     dependency done — its target among them) of a running run that is
//     neither paused nor held at its plan gate gets critique.requested
//     for its next attempt in place of a task.assigned, carrying how the
//     target ended (status, exit code, redacted output tail) and the
//     goal. It takes no executor slot and is not judged by the policy
//     (the policy allows critique steps: they run no command); the run's
//     budgets count it like any step.
//   - Fold of critique.requested: the attempt is assigned, held by no
//     node (Step.Node empty, in no node's slots); the fold of a
//     planner's plan.claimed of that attempt makes it running.
//   - Fold of critique.recorded (signed by a planner: the envelope
//     rules refuse another signer): the verdict of the current attempt
//     is its result, folded as a task.finished result would be (State.
//     attemptEnded), so retries, on_failure (replan included) and
//     compensation apply: pass succeeds the step; fail fails it with
//     class logic and the judgement as its error and output (a pass's
//     judgement is its output too); error (or a
//     verdict this version does not know) fails it with class transient,
//     retried within its retries. A verdict for another attempt, or a
//     second one, is ignored.
//
// The planners answer every request, with verdict error code no_planner
// when no planner that can judge claimed it within their claim timeout,
// and a planner's judge is bounded by its planning timeout. With no
// planner node at all nobody would answer: the leader applies the
// no-planner rule (noplanner.go) to a request no planner claimed — the
// run fails with code no_planner NoPlannerAfter the request (or the
// leader's election, whichever is later). A claimed attempt is the
// claiming planner's to answer. A run stopped
// meanwhile (cancelled, failed) finishes without waiting: there is no
// attempt to cancel, and a late verdict is ignored.

// KindCritique is the decision kind of critique.requested. Its key:
// Run, Step, Attempt, Revision (the run's Resumes).
const KindCritique DecisionKind = "critique"

// critiqueKey names the request of one critique attempt.
func critiqueKey(run, step string, attempt, resumes int) DecisionKey {
	return DecisionKey{Kind: KindCritique, Run: run, Step: step, Attempt: attempt, Revision: resumes}
}

// isCritique reports whether a step is a critique step.
// A synthesise step is scheduled as one (research.go).
func isCritique(st *Step) bool {
	return st.Spec.Kind == event.KindCritique || st.Spec.Kind == event.KindSynthesise
}

// maxCritiqueText caps the goal and the target's output tail a critique
// request carries (an executor keeps 4 KiB of output; a goal's text may
// be far longer), so that the request fits in one event.
const maxCritiqueText = 16 << 10

// critique asks the planners to judge the next attempt of critique step
// st of r (ready): critique.requested.
func (d *decider) critique(r *Run, st *Step) {
	attempt := st.Attempt + 1
	spec, mem, err := d.resolveMemory(r, st) // memoryref.go: the criteria are a prompt
	if err != nil {
		if d.s.Policy != nil {
			d.refuseMemory(r, st, d.s.Policy.Ref(), err)
		}
		return
	}
	req := event.CritiqueRequestedData{Decision: d.decision(), Step: st.Spec.ID, Attempt: attempt,
		Target: st.Spec.Target, Criteria: spec.Criteria, Goal: r.Goal, Memory: mem}
	if r.Text != "" {
		req.Goal = r.Text
	}
	req.Goal = cutEnd(req.Goal, maxCritiqueText)
	if i, ok := r.index[st.Spec.Target]; ok {
		t := r.Steps[i]
		synthesis(&req, st, t) // research.go
		req.TargetStatus, req.Output = event.StepStatus(t.Status.Wire()), cutStart(t.Tail, maxCritiqueText)
		if t.ExitCode != nil {
			req.ExitCode = *t.ExitCode
		}
	}
	d.emit(critiqueKey(r.ID, st.Spec.ID, attempt, r.Resumes), event.CritiqueRequested, r.ID, "", req)
}

// foldCritiqueRequested starts the next attempt of a pending critique
// step of a running run: it is assigned, held by no node. A request for another
// attempt, another kind of step, or a run that does not run is ignored.
func foldCritiqueRequested(s *State, ev event.Event) {
	var d event.CritiqueRequestedData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st == nil || !isCritique(st) || r.Status != RunRunning || d.Attempt != st.Attempt+1 || !st.Status.CanMove(StepAssigned) {
		s.Ignored++
		return
	}
	st.Node = "" // no node holds a critique: it takes no slot (holding)
	if !s.setStepStatus(r, i, StepAssigned) {
		return
	}
	st.Attempt = d.Attempt
	st.AssignedSeq, st.SlotAt, st.Next, st.RequestedAt = ev.Seq, time.Time{}, "", ev.Time
	s.setWait(r, i)
	st.StartedAt, st.FinishedAt = time.Time{}, time.Time{}
	st.ExitCode, st.Error, st.Code, st.Class, st.Critique = nil, "", "", "", nil
}

// foldCritiqueClaimed folds a planner's claim of a critique attempt: the
// attempt, assigned (asked for), runs from then on (a planner judges it).
// A claim of a plan revision, of another attempt, or of an attempt that
// already runs (a claim taken over) changes nothing.
func foldCritiqueClaimed(s *State, ev event.Event) {
	var d event.PlanClaimedData
	if ev.Decode(&d) != nil || d.Step == "" {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st == nil || !isCritique(st) || d.Attempt != st.Attempt || st.Status != StepAssigned {
		return
	}
	if s.setStepStatus(r, i, StepRunning) {
		st.StartedAt = ev.Time
	}
}

// foldCritiqueRecorded folds a planner's verdict as the result of the
// critique attempt it names, when that attempt is the step's current
// one and still runs.
func foldCritiqueRecorded(s *State, ev event.Event) {
	var d event.CritiqueRecordedData
	if !s.decode(ev, &d) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if st != nil && !isCritique(st) {
		st = nil // counted as ignored
	}
	if !s.currentAttempt(st, d.Attempt, "") {
		return
	}
	d.Judgement, d.Error = cutEnd(d.Judgement, maxJudgement), cutEnd(d.Error, maxVerdictError)
	s.attemptEnded(r, i, verdictResult(st, d), ev)
	st.Critique = &Verdict{Verdict: d.Verdict, Judgement: d.Judgement, Error: d.Error, Code: d.Code}
	s.touchStep(r, i)
}

// cloneVerdict copies v (nil stays nil).
func cloneVerdict(v *Verdict) *Verdict {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// Bounds of a verdict's texts as the fold keeps them: a judgement or an
// error longer (a planner cuts them shorter) would make the step's error,
// the run's end and a replan request carry it whole.
const (
	maxJudgement    = 8 << 10
	maxVerdictError = 20 << 10
)

// verdictResult is the task result a verdict stands for.
func verdictResult(st *Step, d event.CritiqueRecordedData) event.TaskFinishedData {
	status, class, why, tail := event.TaskFailed, event.ClassTransient, "", ""
	switch d.Verdict {
	case event.VerdictPass:
		status, class, tail = event.TaskSucceeded, "", d.Judgement // an open plan's next request shows it
	case event.VerdictFail:
		class, tail = event.ClassLogic, d.Judgement
		why = fmt.Sprintf("critique of %s failed: %s", st.Spec.Target, orNone(d.Judgement))
	default:
		e := d.Error
		if d.Verdict != event.VerdictError {
			e = fmt.Sprintf("unknown verdict %q", d.Verdict)
		}
		if d.Code != "" {
			e = d.Code + ": " + e
		}
		why = fmt.Sprintf("critique of %s has no verdict: %s", st.Spec.Target, orNone(e))
	}
	return event.TaskFinishedData{Step: d.Step, Attempt: d.Attempt, Started: st.StartedAt,
		Status: status, Class: class, Error: why, OutputTail: tail}
}

// orNone is s, or "(none given)" when empty.
func orNone(s string) string {
	if s == "" {
		return "(none given)"
	}
	return s
}

// keepTargetTail keeps the output tail of the attempt of step i of r
// that just ended when a critique step targets it: the critique's
// request carries it. Other steps keep the tail of failures only.
func (s *State) keepTargetTail(r *Run, i int, tail string) {
	if i >= len(r.dependents) {
		return
	}
	for _, j := range r.dependents[i] {
		if c := r.Steps[j]; isCritique(c) && c.Spec.Target == r.Steps[i].Spec.ID {
			r.Steps[i].Tail = tail
			return
		}
	}
}

// critiqueProblem says why the run's critique steps cannot be scheduled:
// a critique's target must be a step it depends on, and not a critique.
// "" when they can.
func (r *Run) critiqueProblem() string {
	for _, st := range r.Steps {
		if !isCritique(st) {
			continue
		}
		i, ok := r.index[st.Spec.Target]
		switch {
		case st.Spec.Target == "" || !ok:
			return fmt.Sprintf("critique step %q targets %q, which is not a step of the plan", st.Spec.ID, st.Spec.Target)
		case isCritique(r.Steps[i]):
			return fmt.Sprintf("critique step %q targets %q, another critique", st.Spec.ID, st.Spec.Target)
		}
		dep := false
		for _, id := range st.Spec.DependsOn {
			dep = dep || id == st.Spec.Target
		}
		if !dep {
			return fmt.Sprintf("critique step %q does not depend on its target %q", st.Spec.ID, st.Spec.Target)
		}
	}
	return ""
}

// unclaimedCritique applies the no-planner rule to an active critique
// attempt that no planner claimed (still assigned): it fails the run with
// CodeNoPlanner once NoPlannerAfter has passed since the request or the
// leader's election, and wakes Decide then otherwise. It reports whether
// it stopped the run.
func (d *decider) unclaimedCritique(r *Run, st *Step) bool {
	if !isCritique(st) || st.Status != StepAssigned || st.RequestedAt.IsZero() {
		return false
	}
	timeout := d.s.claimTimeout()
	due := latest(st.RequestedAt, d.s.ElectedAt).Add(NoPlannerAfter(timeout))
	if d.now.Before(due) {
		d.wakeAt(due)
		return false
	}
	d.stopRun(r, RunFailed, CodeNoPlanner, fmt.Sprintf(
		"no planner answered the critique of step %s (attempt %d) within %s (the claim timeout %s and a margin): is a node with the planner role and a model running?",
		st.Spec.ID, st.Attempt, NoPlannerAfter(timeout), timeout))
	return true
}
