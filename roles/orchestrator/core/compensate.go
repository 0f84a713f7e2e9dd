package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Compensation, when a run fails or is cancelled (rules 1 and 3 of
// Decide), undoes the run's completed steps that can be undone before the
// run finishes:
//
//   - a file.write or file.patch step that succeeded, or that ended
//     failed or cancelled after it started (it may have changed files
//     before it stopped), is undone by a step of kind file.restore on the
//     node that applied it (its before-images are there), compensating
//     that attempt with the edits its task.finished reported (none for an
//     attempt that did not report them: the executor then restores what
//     its journal holds for the step);
//   - a shell step that succeeded and declares compensate runs that
//     command as a shell step, on the node that ran it.
//
// The leader first cancels the run's active steps and waits until their
// executors report them ended (a step on a gone executor is not waited
// for), so that an edit that completes meanwhile is undone too. Then it
// undoes the steps in reverse order of their ends (task.finished), one at
// a time: the next compensation is assigned once the previous one is
// final. A compensation that fails (a file changed since the edit, the
// command failed) does not stop the others: every later one in the order
// still runs, and the run's reason names the compensations that failed
// (or that an operator skipped).
// The run then finishes with the status it was stopping with (failed or
// cancelled), the reason saying what was compensated.
//
// Each compensation is a step of the run, added after the plan's steps by
// the fold of its first task.assigned (Step.Compensates): shown by run
// show, folded like any step, retried like one (a file.restore is
// idempotent, so an attempt interrupted by a crash is simply assigned
// again). The fold holds at most one compensation per compensated
// attempt, and Decide assigns a compensation's next attempt only while
// the step is pending, so a leader restarted from a snapshot and the
// ledger continues where the last one was and assigns no compensation
// twice.
//
// A compensation waits while the node that must run it is gone (failed or
// left) or suspect: the before-images are on that node, and no other can
// undo its edits. The run stays running, its compensation unassigned, until
// the node's executor announces itself again. A compensation whose node is
// lost while it holds it, or that its node did not start within
// StartDeadline, is given up like any attempt (task.cancel with code
// superseded): a file.restore becomes pending and is assigned again to the
// same node when it can take it; a shell compensation that may have
// started is held in needs-decision and waits for an operator's step
// retry or skip.

// compensationRetries is how many more attempts a compensation gets after
// a transient failure or an interruption.
const compensationRetries = 2

// compensating stops run r with compensation and reports true when r has
// steps to undo, or has started undoing them; it reports false, leaving
// stopRun to cancel and finish as it always did, when nothing of r can
// need compensation. When it reports true it has emitted what the run
// needs now: the cancels of its active steps, the next compensation, or
// run.finished once every compensation is final.
func (d *decider) compensating(r *Run, status RunStatus, code Code, reason string) bool {
	if !mayCompensate(r) {
		return false
	}
	if status == RunFailed {
		code, reason = stopCause(r, code, reason)
	}
	waiting := false
	for _, st := range r.Steps {
		if st.Compensates != nil {
			continue
		}
		if st.Active() {
			if st.CancelSent != st.Attempt {
				d.cancel(r, st.Spec.ID, st.Attempt, st.Node, code, reason)
			}
			if ex := d.s.Executors[st.Node]; ex != nil && ex.Gone == "" {
				waiting = true
			}
		}
		if st.Status != StepPending {
			continue
		}
		if node, ok := d.assigning[attemptRef{r.ID, st.Spec.ID, st.Attempt + 1}]; ok {
			d.cancel(r, st.Spec.ID, st.Attempt+1, node, code, reason)
			waiting = true
		}
	}
	if waiting {
		return true
	}
	var done, failed []string
	for _, st := range undoOrder(r) {
		cs := r.compensation(st.Spec.ID, st.Attempt)
		switch {
		case cs == nil:
			if why := d.compensationRefused(r, st); why != "" {
				failed = append(failed, why)
				continue
			}
			if why := d.discardOrphaned(st); why != "" { // git.go
				failed = append(failed, why)
				continue
			}
			d.assignCompensation(r, st, nil)
			return true
		case cs.Status == StepPending:
			if why := d.discardOrphaned(st); why != "" { // git.go
				failed = append(failed, why)
				continue
			}
			if cs.NotBefore.After(d.now) {
				d.wakeAt(cs.NotBefore)
				return true
			}
			d.assignCompensation(r, st, cs)
			return true
		case !cs.Terminal():
			d.giveUp(r, cs)
			return true // assigned, running or held for an operator
		case cs.Status == StepSucceeded:
			done = append(done, st.Spec.ID)
		default:
			failed = append(failed, fmt.Sprintf("compensation %s of step %s %s: %s", cs.Spec.ID, st.Spec.ID, cs.Status, cs.Error))
		}
	}
	d.finish(r, status, code, compensatedReason(reason, done, failed))
	return true
}

// giveUp gives up the active attempt of compensation cs (rule 5 of
// Decide, but for the node that must run it): when its executor is gone,
// or when the attempt could have started StartDeadline ago and was not
// reported started (the assignment was lost). A file.restore, idempotent,
// becomes pending, and is assigned again to the same node once it can
// take it; a shell compensation that may have started is held in
// needs-decision, for an operator's step retry or skip. A draining node
// keeps its compensations: no other node can run them.
func (d *decider) giveUp(r *Run, cs *Step) {
	ex := d.s.Executors[cs.Node]
	if !cs.Active() || ex == nil || cs.CancelSent == cs.Attempt {
		return
	}
	var reason string
	switch {
	case ex.Gone != "":
		reason = fmt.Sprintf("node %s %s", cs.Node, ex.Gone)
	case cs.Status == StepAssigned && !cs.SlotAt.IsZero():
		due := latest(cs.SlotAt, d.s.ElectedAt, ex.Since).Add(StartDeadline)
		if d.now.Before(due) {
			d.wakeAt(due)
			return
		}
		reason = fmt.Sprintf("not started within %s of a free slot on node %s", StartDeadline, cs.Node)
	default:
		return
	}
	d.cancel(r, cs.Spec.ID, cs.Attempt, cs.Node, CodeSuperseded, reason)
}

// stopCause is why a failing run stops: the first step in plan order that
// ended without being done other than one the run's end cancelled (while
// the run waits for its steps to end, a step it cancelled may come before
// the one that failed it); code and reason as given when there is none.
// A step that asked for a replan is not the cause: the replan's end is
// (its budget spent, the planner's rejection, an invalid revision), as
// given.
func stopCause(r *Run, code Code, reason string) (Code, string) {
	if r.WorktreeLost != "" {
		return CodeWorktreeLost, r.WorktreeLost // git.go
	}
	for _, st := range r.Steps {
		if st.Compensates == nil && st.Terminal() && !st.Done() && st.Code != CodeRunEnded && !(st.Replan && st.Status == StepFailed) {
			return stepEnd(st)
		}
	}
	return code, reason
}

// mayCompensate reports whether r has a plan step that is, or may become,
// one to undo, or a compensation already.
func mayCompensate(r *Run) bool {
	for _, st := range r.undoSteps() {
		if st.Compensates != nil || undoable(st) || (st.Active() && undoKind(st.Spec) != "") {
			return true
		}
	}
	return false
}

// undoKind is the kind of step that undoes spec: file.restore for a file
// edit, shell for a shell step that declares compensate, "" for a step
// that cannot be undone.
func undoKind(spec event.Step) event.StepKind {
	switch {
	case gitUndone(spec):
		return "" // the run's git.discard removes it (git.go)
	case spec.Kind == event.KindGitWorktree:
		return event.KindGitDiscard
	case spec.Kind == event.KindFileWrite || spec.Kind == event.KindFilePatch:
		return event.KindFileRestore
	case spec.Kind == event.KindShell && spec.Compensate != "":
		return event.KindShell
	}
	return ""
}

// undoable reports whether plan step st, as it ended, is one to undo: a
// file edit that succeeded or ended after it started, a shell step with
// compensate that succeeded.
func undoable(st *Step) bool {
	if st.Compensates != nil || st.Attempt == 0 {
		return false
	}
	switch undoKind(st.Spec) {
	case event.KindFileRestore, event.KindGitDiscard:
		return st.Status == StepSucceeded ||
			((st.Status == StepFailed || st.Status == StepCancelled) && !st.StartedAt.IsZero())
	case event.KindShell:
		return st.Status == StepSucceeded
	}
	return false
}

// undoOrder lists the plan steps of r to undo, the latest ended first
// (ties, which the fold does not give, by plan order reversed).
func undoOrder(r *Run) []*Step {
	var out []*Step
	for _, st := range r.undoSteps() {
		if undoable(st) {
			out = append(out, st)
		}
	}
	slices.SortStableFunc(out, func(a, b *Step) int {
		if a.EndSeq != b.EndSeq {
			if a.EndSeq > b.EndSeq {
				return -1
			}
			return 1
		}
		return r.index[b.Spec.ID] - r.index[a.Spec.ID]
	})
	return out
}

// assignCompensation assigns the next attempt of the compensation of st
// (cs, nil before its first) to the node that ran st, unless that node
// cannot take it now: its executor is unknown, gone or suspect, or holds
// all it may (Capacity). The compensation then waits; an event about the
// node brings Decide back.
func (d *decider) assignCompensation(r *Run, st, cs *Step) {
	node := st.Node
	ex := d.s.Executors[node]
	if ex == nil || ex.Gone != "" || d.load[node] >= ex.Capacity() {
		return
	}
	if n := d.s.Nodes[node]; n != nil && n.Incarnation == ex.Incarnation && n.State == NodeSuspect {
		return
	}
	var spec event.Step
	attempt, comp := 1, &event.Compensation{Step: st.Spec.ID, Attempt: st.Attempt}
	if cs != nil {
		spec, attempt, comp = cs.Spec, cs.Attempt+1, cs.Compensates
	} else {
		spec = undoStep(r, st)
		if spec.Kind == event.KindFileRestore {
			comp.Edits = st.FileEdits
		}
	}
	if _, ok := d.assigning[attemptRef{r.ID, spec.ID, attempt}]; ok {
		return
	}
	d.load[node]++
	why := fmt.Sprintf("compensates step %s (attempt %d)", st.Spec.ID, st.Attempt)
	if cs != nil && cs.Next != "" {
		why += ": " + cs.Next
	}
	var ref event.PolicyRef
	if pf := d.s.Policy; pf != nil {
		ref = pf.Ref()
	}
	d.emit(assignKey(r.ID, spec.ID, attempt, node), event.TaskAssigned, r.ID, node,
		event.TaskAssignedData{Decision: d.decision(),
			Step: spec, Attempt: attempt, Node: node, ReadyAt: d.now, Reason: why, Compensates: comp, Policy: ref})
}

// compensationRefused says why the policy in force does not let st's
// compensation run, or "" when it does. A file.restore always may (it
// puts back what an edit that was judged changed); a shell compensate
// command is judged like any command, and runs only when the policy
// allows it: a compensation is not gated — the run is stopping — so one
// the policy would gate or denies is reported in the run's reason and not
// run.
func (d *decider) compensationRefused(r *Run, st *Step) string {
	pf := d.s.Policy
	spec := undoStep(r, st)
	if pf == nil || spec.Kind != event.KindShell {
		return ""
	}
	v := d.s.judge(spec, event.GateSubject(spec, pf.Ref()))
	if v.Action == policy.Allow {
		return ""
	}
	return fmt.Sprintf("compensation of step %s not run: policy version %d %ss %q (rule %s: %s)",
		st.Spec.ID, pf.Version, v.Action, spec.Run, v.Rule, v.Why)
}

// undoStep is the step that undoes st: a file.restore, idempotent, or a
// shell step running st's compensate command where st ran (its cwd, env
// and user), under the id undoID gives.
func undoStep(r *Run, st *Step) event.Step {
	spec := event.Step{ID: undoID(r, st.Spec.ID), Title: "undo " + st.Spec.ID, Subgoal: st.Spec.Subgoal,
		Kind: undoKind(st.Spec), Retries: compensationRetries}
	if spec.Kind == event.KindFileRestore || spec.Kind == event.KindGitDiscard {
		spec.Idempotent = true
		spec.Git, spec.Worktree = st.Spec.Git, st.Spec.Worktree
		return spec
	}
	spec.Run, spec.Cwd, spec.Env, spec.RunAs, spec.Timeout = st.Spec.Compensate, st.Spec.Cwd, st.Spec.Env, st.Spec.RunAs, st.Spec.Timeout
	return spec
}

// undoID is the id of the step that undoes step: "<step>.undo", or, when
// that is too long for a step id, "undo-" and 16 hex digits of the
// step's sha256; followed by "-2", "-3"… while the id is taken by another
// step of r. It depends only on r, so every leader derives the same id.
func undoID(r *Run, step string) string {
	sum := sha256.Sum256([]byte(step))
	hashed := "undo-" + hex.EncodeToString(sum[:8])
	base := step + ".undo"
	for n := 1; ; n++ {
		id := base
		if n > 1 {
			id += "-" + strconv.Itoa(n)
		}
		if event.ValidStepID(id) != nil && base != hashed {
			base, n = hashed, 0 // too long: start again from the short form
			continue
		}
		if _, taken := r.index[id]; !taken {
			return id
		}
	}
}

// compensatedReason is the reason of a run that finishes after its
// compensations: the reason it stopped for, then the steps undone (latest
// first) and the compensations that failed.
func compensatedReason(reason string, done, failed []string) string {
	var b strings.Builder
	b.WriteString(reason)
	if len(done) > 0 {
		b.WriteString("; compensated: " + strings.Join(done, ", "))
	}
	for _, f := range failed {
		b.WriteString("; " + f)
	}
	return b.String()
}

// compensatingReason is what a run that compensates shows as its reason
// while it goes on: its compensation under way, and where; "" when none is.
func (r *Run) compensatingReason() string {
	for i := len(r.Steps) - 1; i >= 0 && r.Steps[i].Compensates != nil; i-- {
		if cs := r.Steps[i]; !cs.Terminal() {
			return fmt.Sprintf("compensating: %s undoes step %s (%s, node %s)", cs.Spec.ID, cs.Compensates.Step, cs.Status, cs.Node)
		}
	}
	return ""
}
