package core

import (
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
)

// The statuses' values are the protocol's, declared once in
// bus/event/status.go; this package adds only those it never shows
// (approved, edited and denied steps; an attempt assigned or running) and
// the transition tables. TestStatusesMatchTheProtocol fails when a status
// is added to the protocol and not to a table.

// RunStatus is where a run is in its lifecycle (runTable).
type RunStatus string

// Run statuses. Paused is entered by an operator's run.pause; nothing
// enters planning yet (the planner announces no start).
const (
	RunSubmitted = RunStatus(event.RunSubmitted)
	RunPlanning  = RunStatus(event.RunPlanning)
	RunPlanned   = RunStatus(event.RunPlanned)
	RunRunning   = RunStatus(event.RunRunning)
	RunPaused    = RunStatus(event.RunPaused)
	RunSucceeded = RunStatus(event.RunSucceeded)
	RunFailed    = RunStatus(event.RunFailed)
	RunCancelled = RunStatus(event.RunCancelled)
)

// StepStatus is where a step is in its lifecycle (stepTable).
type StepStatus string

// Step statuses. A step is gated while a policy gate holds it
// (gate.opened) and pending again once the gate has its approvals or an
// edit; approved, edited and denied are in the table but not entered. A
// step enters needs-decision when the attempt of a step that is not idempotent
// was given up and may have started (its node failed, for one), and leaves
// it by an operator's gate.decided (or step.decided). A step in State is never ready:
// readiness depends on the clock and is computed by Decide, and StepStatus
// shows a pending step whose dependencies are all done as ready.
const (
	StepPending                  = StepStatus(event.StepPending)
	StepReady                    = StepStatus(event.StepReady)
	StepGated                    = StepStatus(event.StepGated)
	StepApproved      StepStatus = "approved"
	StepEdited        StepStatus = "edited"
	StepDenied        StepStatus = "denied"
	StepAssigned                 = StepStatus(event.StepAssigned)
	StepRunning                  = StepStatus(event.StepRunning)
	StepNeedsDecision            = StepStatus(event.StepNeedsDecision)
	StepSucceeded                = StepStatus(event.StepSucceeded)
	StepFailed                   = StepStatus(event.StepFailed)
	StepSkipped                  = StepStatus(event.StepSkipped)
	StepCancelled                = StepStatus(event.StepCancelled)
)

// TaskStatus is where one attempt of a step (a task on an executor) is, as
// the orchestrator sees it (taskTable): assigned or running while its step
// holds the slot, then the outcome the executor reports in task.finished.
type TaskStatus string

// Task statuses: the attempt's state while live, then its outcome.
const (
	TaskAssigned  TaskStatus = "assigned"
	TaskRunning   TaskStatus = "running"
	TaskSucceeded            = TaskStatus(event.TaskSucceeded)
	TaskFailed               = TaskStatus(event.TaskFailed)
	TaskSkipped              = TaskStatus(event.TaskSkipped) // a creates/check guard found the work done
	TaskCancelled            = TaskStatus(event.TaskCancelled)
)

// runTable is the run lifecycle, the only place that says which status a
// run may move to:
//
//	submitted → planning → planned → running ⇄ paused → succeeded | failed | cancelled
//
// A newer plan revision may replace a planned run's plan (planned →
// planned); a run that cannot be planned fails before it runs; any run not
// yet final may be cancelled. A status without successors is final.
var runTable = lifecycle[RunStatus]{
	{RunSubmitted, []RunStatus{RunPlanning, RunPlanned, RunFailed, RunCancelled}},
	{RunPlanning, []RunStatus{RunPlanned, RunFailed, RunCancelled}},
	{RunPlanned, []RunStatus{RunPlanned, RunRunning, RunFailed, RunCancelled}},
	{RunRunning, []RunStatus{RunPaused, RunSucceeded, RunFailed, RunCancelled}},
	{RunPaused, []RunStatus{RunRunning, RunSucceeded, RunFailed, RunCancelled}},
	{RunSucceeded, nil},
	{RunFailed, nil},
	{RunCancelled, nil},
}

// stepTable is the step lifecycle, the only place that says which status a
// step may move to:
//
//	pending → ready → [gated → approved | edited | skipped | denied] → assigned → running
//	  → succeeded | failed | skipped | cancelled
//	assigned | running → needs-decision → pending (retry) | skipped
//
// A failed attempt that may be retried goes back to pending (its next
// assignment is attempt+1), from assigned (it failed to start) or running;
// so does an attempt given up (superseded) that is idempotent or never
// started, and one that may have started and is not idempotent goes to
// needs-decision.
// The fold stores a ready step as pending (readiness is computed), so
// pending moves where ready does. Any step not yet final may be cancelled
// (its run ended). A status without successors is final.
var stepTable = lifecycle[StepStatus]{
	{StepPending, []StepStatus{StepReady, StepGated, StepAssigned, StepFailed, StepSkipped, StepCancelled}},
	{StepReady, []StepStatus{StepGated, StepAssigned, StepFailed, StepSkipped, StepCancelled}},
	{StepGated, []StepStatus{StepPending, StepApproved, StepEdited, StepSkipped, StepFailed, StepDenied, StepCancelled}},
	{StepApproved, []StepStatus{StepAssigned, StepCancelled}},
	{StepEdited, []StepStatus{StepAssigned, StepCancelled}},
	{StepAssigned, []StepStatus{StepRunning, StepSucceeded, StepFailed, StepSkipped, StepCancelled, StepPending, StepNeedsDecision}},
	{StepRunning, []StepStatus{StepSucceeded, StepFailed, StepSkipped, StepCancelled, StepPending, StepNeedsDecision}},
	{StepNeedsDecision, []StepStatus{StepPending, StepSkipped, StepFailed, StepCancelled}},
	{StepSucceeded, nil},
	{StepFailed, nil},
	{StepSkipped, nil},
	{StepCancelled, nil},
	{StepDenied, nil},
}

// taskTable is the lifecycle of one attempt: assigned → running → an
// outcome; an attempt may also end before it reports a start (a guard
// skipped it, it could not start, it was cancelled).
var taskTable = lifecycle[TaskStatus]{
	{TaskAssigned, []TaskStatus{TaskRunning, TaskSucceeded, TaskFailed, TaskSkipped, TaskCancelled}},
	{TaskRunning, []TaskStatus{TaskSucceeded, TaskFailed, TaskSkipped, TaskCancelled}},
	{TaskSucceeded, nil},
	{TaskFailed, nil},
	{TaskSkipped, nil},
	{TaskCancelled, nil},
}

// Index the tables once: the fold consults them on every status change
// and Decide asks for Terminal on every step.
var (
	runMoves  = runTable.index()
	stepMoves = stepTable.index()
	taskMoves = taskTable.index()
)

// Known reports whether s is a run status of this version's table.
func (s RunStatus) Known() bool { _, ok := runMoves[s]; return ok }

// Terminal reports whether s is final: it has no successor in the table.
func (s RunStatus) Terminal() bool { return runMoves.terminal(s) }

// CanMove reports whether the table lets a run move from s to to.
func (s RunStatus) CanMove(to RunStatus) bool { return runMoves.allows(s, to) }

// Known reports whether s is a step status of this version's table.
func (s StepStatus) Known() bool { _, ok := stepMoves[s]; return ok }

// Terminal reports whether s is final: it has no successor in the table.
func (s StepStatus) Terminal() bool { return stepMoves.terminal(s) }

// CanMove reports whether the table lets a step move from s to to.
func (s StepStatus) CanMove(to StepStatus) bool { return stepMoves.allows(s, to) }

// Known reports whether s is a task status of this version's table.
func (s TaskStatus) Known() bool { _, ok := taskMoves[s]; return ok }

// Terminal reports whether s is an outcome: it has no successor.
func (s TaskStatus) Terminal() bool { return taskMoves.terminal(s) }

// CanMove reports whether the table lets an attempt move from s to to.
func (s TaskStatus) CanMove(to TaskStatus) bool { return taskMoves.allows(s, to) }

// RunStatuses returns every run status, in table order.
func RunStatuses() []RunStatus { return runTable.statuses() }

// StepStatuses returns every step status, in table order.
func StepStatuses() []StepStatus { return stepTable.statuses() }

// TaskStatuses returns every task status, in table order.
func TaskStatuses() []TaskStatus { return taskTable.statuses() }

// status is what the lifecycle tables hold.
type status interface {
	~string
}

// transition is one row of a lifecycle table: a status and the statuses it
// may move to (none: it is final).
type transition[S status] struct {
	from S
	to   []S
}

// lifecycle is a namespace's transition table, one row per status.
type lifecycle[S status] []transition[S]

// moves is a lifecycle indexed by status.
type moves[S status] map[S][]S

func (l lifecycle[S]) index() moves[S] {
	m := make(moves[S], len(l))
	for _, row := range l {
		m[row.from] = row.to
	}
	return m
}

func (l lifecycle[S]) statuses() []S {
	out := make([]S, len(l))
	for i, row := range l {
		out[i] = row.from
	}
	return out
}

func (m moves[S]) allows(from, to S) bool {
	return slices.Contains(m[from], to)
}

func (m moves[S]) terminal(s S) bool {
	to, ok := m[s]
	return ok && len(to) == 0
}

// move is the one writer of every status in State: it moves *cur to to if
// table allows it and reports whether it did; an illegal move changes
// nothing and is counted in s.Ignored.
func move[S status](s *State, table moves[S], cur *S, to S) bool {
	if !table.allows(*cur, to) {
		s.Ignored++
		return false
	}
	*cur = to
	return true
}

// setRunStatus moves r to status to through the run table.
func (s *State) setRunStatus(r *Run, to RunStatus) bool {
	if !move(s, runMoves, &r.Status, to) {
		return false
	}
	s.touch(r)
	return true
}

// setStepStatus moves step i of r to status to through the step table,
// and keeps the index of the slots its attempt holds (onNode).
func (s *State) setStepStatus(r *Run, i int, to StepStatus) bool {
	st := r.Steps[i]
	was := st.Active()
	if !move(s, stepMoves, &st.Status, to) {
		return false
	}
	if st.Active() != was {
		s.holding(st, !was)
	}
	if to != StepGated && to != StepNeedsDecision {
		st.Gate = nil // the gate closes as the step leaves it
	}
	s.touchStep(r, i)
	return true
}

// task is the status of the step's current attempt while it holds a slot
// ("" otherwise: the attempt has ended, or there is none).
func (st *Step) task() TaskStatus {
	switch st.Status {
	case StepAssigned:
		return TaskAssigned
	case StepRunning:
		return TaskRunning
	}
	return ""
}

// taskMay reports whether the step's current attempt may move to to (the
// task table), counting an illegal move as ignored. The attempt's status
// is derived from the step's, so the step's own move records it.
func (s *State) taskMay(st *Step, to TaskStatus) bool {
	cur := st.task()
	return move(s, taskMoves, &cur, to)
}
