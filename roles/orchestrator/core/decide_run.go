package core

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// run decides for one unfinished run.
func (d *decider) run(r *Run) {
	if d.inflight[finishKey(r.ID)] {
		return // its end is already on the way
	}
	switch {
	case r.CancelRequested:
		reason := r.CancelReason
		if reason == "" {
			reason = "cancelled by operator"
		}
		d.stopRun(r, RunCancelled, CodeCancelledByOperator, reason)
	case r.Status == RunPlanned && r.Invalid != "":
		d.finish(r, RunFailed, CodePlanInvalid, "invalid plan: "+r.Invalid)
	case r.Status == RunSubmitted:
		d.awaitFirstPlan(r)
	case r.Status == RunPlanned:
		d.accept(r) // accept.go
	case r.Status == RunRunning, r.Status == RunPaused:
		d.running(r)
	}
}

// running finishes a running run that has failed or completed, and assigns
// its ready steps otherwise.
func (d *decider) running(r *Run) {
	if d.overBudget(r) {
		return
	}
	if why := d.worktreeLost(r); why != "" { // git.go
		d.stopRun(r, RunFailed, CodeWorktreeLost, why)
		return
	}
	complete := true
	var ready, active []*Step
	var replan *Step
	// The steps before doneSteps are done: the first case below.
	for i := r.doneSteps(); i < len(r.Steps); i++ {
		st := r.Steps[i]
		switch {
		case st.Done():
		case st.Status == StepFailed && st.Replan:
			complete = false
			if replan == nil {
				replan = st
			}
		case st.Status == StepPending:
			complete = false
			if r.depsDone(i) {
				ready = append(ready, st)
			}
		case st.Terminal():
			// Final and not done: failed for good, cancelled, denied.
			code, reason := stepEnd(st)
			d.stopRun(r, RunFailed, code, reason)
			return
		case st.Gate != nil:
			complete = false
			d.expire(r, st)
		default:
			complete = false
			if st.Active() {
				active = append(active, st)
			}
		}
	}
	// Only a run that goes on gives attempts up: one that stops cancels
	// them all (stopRun, above).
	for _, st := range active {
		if d.unclaimedCritique(r, st) { // critique.go
			return
		}
		d.check(r, st)
	}
	if replan != nil {
		d.replan(r, replan, active)
		return
	}
	if complete {
		if !d.next(r) { // react.go: an open plan asks for its next revision
			d.finish(r, RunSucceeded, "", "")
		}
		return
	}
	if r.Status == RunPaused || d.s.Policy == nil || d.planHeld(r) {
		return // the operator's brake; no policy to judge with yet; the plan gate
	}
	// The run's wake time counts even when no slot is free.
	for _, st := range ready {
		if st.NotBefore.After(d.now) {
			d.wakeAt(st.NotBefore)
			continue
		}
		if isCritique(st) {
			d.critique(r, st)
			continue
		}
		d.admit(r, st)
	}
}

// check gives up the active attempt of st (rule 5 of Decide) when its
// executor is gone, when its executor drains and the attempt waits in its
// queue, or when the attempt could have started StartDeadline ago and was
// not reported started; otherwise it wakes Decide at the deadline.
func (d *decider) check(r *Run, st *Step) {
	ex := d.s.Executors[st.Node]
	if ex == nil || st.CancelSent == st.Attempt {
		return
	}
	var reason string
	switch {
	case ex.Gone != "":
		reason = fmt.Sprintf("node %s %s", st.Node, ex.Gone)
	case ex.Draining && st.Status == StepAssigned && st.SlotAt.IsZero():
		reason = fmt.Sprintf("node %s is draining", st.Node)
	case st.Status == StepAssigned && !st.SlotAt.IsZero():
		due := latest(st.SlotAt, d.s.ElectedAt, ex.Since).Add(StartDeadline)
		if d.now.Before(due) {
			d.wakeAt(due)
			return
		}
		reason = fmt.Sprintf("not started within %s of a free slot on node %s", StartDeadline, st.Node)
	default:
		return
	}
	d.cancel(r, st.Spec.ID, st.Attempt, st.Node, CodeSuperseded, reason)
}

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// assign gives the step's next attempt to the executor pickNode chooses,
// unless that assignment is already in flight or no executor has room.
// The assignment carries the reason for an attempt other than the first
// that is not a retry after a failure (Step.Next), and spec, the step
// with its memory references resolved (mem, memoryref.go).
func (d *decider) assign(r *Run, st *Step, spec event.Step, mem []event.MemoryValue, ref event.PolicyRef, approved string, approvers []string, toolHash string) {
	attempt := st.Attempt + 1
	if _, ok := d.assigning[attemptRef{r.ID, st.Spec.ID, attempt}]; ok {
		return
	}
	avoid := ""
	if st.Lost == st.Attempt && st.Attempt > 0 {
		avoid = st.Node
	}
	inputs, stored, err := d.resolveInputs(r, spec) // inputs.go
	if err != nil {
		d.refuseInputs(r, st, ref, err)
		return
	}
	node, pinned := d.pinnedNode(r, st) // git.go
	if !pinned {
		node = d.pickNode(st.Spec.Capabilities, avoid)
	}
	if node == "" {
		return
	}
	d.load[node]++
	readyAt := st.ReadyAt
	if st.NotBefore.After(readyAt) {
		readyAt = st.NotBefore
	}
	key := assignKey(r.ID, st.Spec.ID, attempt, node)
	key.Revision, key.Policy = r.Resumes, ref.Version
	d.emit(key, event.TaskAssigned, r.ID, node,
		event.TaskAssignedData{Decision: d.decision(),
			Step: spec, Attempt: attempt, Node: node, ReadyAt: readyAt, Reason: st.Next,
			Policy: ref, Approved: approved, Approvers: approvers, Memory: mem, ToolHash: toolHash, Inputs: inputs, ArtifactBytes: stored})
}

// stopRun cancels the run's active steps (once per attempt) and the
// assignments still in flight to executors (which will reach them), then
// finishes the run. The cancels carry the run's code. A run with steps to
// undo is stopped by compensating instead (compensate.go).
func (d *decider) stopRun(r *Run, status RunStatus, code Code, reason string) {
	if d.compensating(r, status, code, reason) {
		return
	}
	for _, st := range r.Steps {
		if st.Active() && st.CancelSent != st.Attempt {
			d.cancel(r, st.Spec.ID, st.Attempt, st.Node, code, reason)
		}
		if st.Status != StepPending {
			continue
		}
		if node, ok := d.assigning[attemptRef{r.ID, st.Spec.ID, st.Attempt + 1}]; ok {
			d.cancel(r, st.Spec.ID, st.Attempt+1, node, code, reason)
		}
	}
	d.finish(r, status, code, reason)
}

// cancel emits task.cancel for one attempt.
func (d *decider) cancel(r *Run, step string, attempt int, node string, code Code, reason string) {
	if node == "" {
		return // a critique attempt: no executor holds it (critique.go)
	}
	d.emit(cancelKey(r.ID, step, attempt), event.TaskCancel, r.ID, node,
		event.TaskCancelData{Decision: d.decision(),
			Step: step, Attempt: attempt, Node: node, Reason: reason, Code: code.Wire()})
}

// maxReason caps a run's end's reason: it quotes a step's error, which
// an executor's report or a verdict may make long.
const maxReason = 64 << 10

// finish emits run.finished.
func (d *decider) finish(r *Run, status RunStatus, code Code, reason string) {
	d.emit(finishKey(r.ID), event.RunFinished, r.ID, "",
		event.RunFinishedData{Decision: d.decision(), Status: status.Wire(), Reason: cutEnd(reason, maxReason), Code: code.Wire()})
}

// stepEnd says why a step that ended without being done fails its run.
func stepEnd(st *Step) (Code, string) {
	switch st.Status {
	case StepFailed:
		return CodeStepFailed, fmt.Sprintf("step %s failed: %s", st.Spec.ID, st.Error)
	case StepCancelled:
		return CodeStepCancelled, fmt.Sprintf("step %s was cancelled", st.Spec.ID)
	}
	return CodeStepFailed, fmt.Sprintf("step %s was %s", st.Spec.ID, st.Status)
}
