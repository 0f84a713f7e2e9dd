package event

// RunStatus is where a run is in its life: the status of a run in
// run.finished (a final one), in the orchestrator's state and in the query
// API. Statuses are append-only: a value is never renamed or given another
// meaning.
type RunStatus string

// Run statuses.
const (
	// RunSubmitted: goal.submitted was folded; no planner has answered.
	RunSubmitted RunStatus = "submitted"
	// RunPlanning: a planner is working on the goal.
	RunPlanning RunStatus = "planning"
	// RunPlanned: a plan was proposed and waits for plan.accepted.
	RunPlanned RunStatus = "planned"
	// RunRunning: the plan was accepted; steps are being scheduled.
	RunRunning RunStatus = "running"
	// RunPaused: scheduling is suspended (no new assignments).
	RunPaused RunStatus = "paused"
	// RunSucceeded (final): every step succeeded, was skipped or failed
	// with on_failure "continue".
	RunSucceeded RunStatus = "succeeded"
	// RunFailed (final): the plan was rejected or invalid, or a step failed
	// for good.
	RunFailed RunStatus = "failed"
	// RunCancelled (final): an operator cancelled it.
	RunCancelled RunStatus = "cancelled"
)

// StepStatus is where one step of a run is: the orchestrator's scheduling
// state, shown by the query API. Statuses are append-only.
type StepStatus string

// Step statuses.
const (
	// StepPending: waiting for its dependencies, or for a retry's backoff.
	StepPending StepStatus = "pending"
	// StepReady: every dependency is done; waiting for an executor slot.
	// Readiness depends on the clock, so it is a view of a pending step,
	// never a stored state.
	StepReady StepStatus = "ready"
	// StepAssigned: task.assigned was folded; the executor has not started.
	StepAssigned StepStatus = "assigned"
	// StepRunning: the executor reported task.started.
	StepRunning StepStatus = "running"
	// StepSucceeded (final): the attempt exited 0.
	StepSucceeded StepStatus = "succeeded"
	// StepFailed (final): the last attempt failed and is not retried.
	StepFailed StepStatus = "failed"
	// StepSkipped (final): a creates/check guard found the work done.
	StepSkipped StepStatus = "skipped"
	// StepCancelled (final): stopped by a cancel.
	StepCancelled StepStatus = "cancelled"
	// StepNeedsDecision: an attempt that is not idempotent may have partly
	// run on a node that was lost; nothing runs it again until an operator
	// decides (step.decided: retry or skip). Protocol version 2.
	StepNeedsDecision StepStatus = "needs-decision"
	// StepGated: the policy asks operators to approve the step before it
	// runs (gate.opened); nothing runs it until the gate's approvals are
	// in (gate.decided). Protocol version 5.
	StepGated StepStatus = "gated"
)

// TaskStatus is the outcome of one attempt of a step, as the executor
// reports it in task.finished. Statuses are append-only.
type TaskStatus string

// Task outcomes.
const (
	// TaskSucceeded: the command exited 0 (a noop step always succeeds).
	TaskSucceeded TaskStatus = "succeeded"
	// TaskFailed: see the attempt's FailureClass.
	TaskFailed TaskStatus = "failed"
	// TaskSkipped: a creates/check guard found the work done.
	TaskSkipped TaskStatus = "skipped"
	// TaskCancelled: stopped by an operator's cancel.
	TaskCancelled TaskStatus = "cancelled"
)

// FailureClass says why an attempt failed, which decides whether it is
// retried. Classes are append-only.
type FailureClass string

// Failure classes.
const (
	// ClassTransient: a timeout, a lost node, an interruption, a process
	// that could not start or was killed by someone else. Retried up to
	// the step's retries.
	ClassTransient FailureClass = "transient"
	// ClassLogic: a non-zero exit, a failed check, a step that cannot run as
	// written. Routed by the step's on_failure.
	ClassLogic FailureClass = "logic"
	// ClassPolicy: denied by policy. Never retried.
	ClassPolicy FailureClass = "policy"
)
