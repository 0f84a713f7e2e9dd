package core

import "slices"

// Code is the stable reason a step or a run failed or was cancelled, beside
// the text for people (Step.Error, Run.Reason). Programs test the code; the
// text may change. Codes are append-only (pinned by testdata/codes.golden):
// a code is never renamed, removed or given another meaning.
type Code string

// Codes of a step that failed (its last failed attempt, also while it waits
// for a retry) or was cancelled.
const (
	// CodeExitNonzero: the command exited with a non-zero code.
	CodeExitNonzero Code = "exit_nonzero"
	// CodeTimedOut: the attempt ran out of its timeout.
	CodeTimedOut Code = "timed_out"
	// CodeInterrupted: the attempt was interrupted (its executor stopped or
	// restarted) and may have partly run.
	CodeInterrupted Code = "interrupted"
	// CodeInterruptedNotIdempotent: interrupted, and not re-run because
	// the step is not idempotent.
	CodeInterruptedNotIdempotent Code = "interrupted_not_idempotent"
	// CodePolicyDenied: the safety policy refused the step.
	CodePolicyDenied Code = "policy_denied"
	// CodeTransientError: another transient failure (the process could not
	// be started or waited for, it was killed by a signal).
	CodeTransientError Code = "transient_error"
	// CodeLogicError: another failure of the step itself (an unknown kind,
	// an empty command, a working directory or environment it cannot have,
	// a check that failed).
	CodeLogicError Code = "logic_error"
	// CodeCancelled: the executor reported the attempt cancelled.
	CodeCancelled Code = "cancelled"
	// CodeDependencyFailed: the step never ran because a step it depends
	// on (directly or not) failed for good or was cancelled.
	CodeDependencyFailed Code = "dependency_failed"
	// CodeRunEnded: the step's run ended (failed) before the step could
	// finish, for a reason that is not the step's nor its dependencies'.
	CodeRunEnded Code = "run_ended"
)

// Codes of a run that failed or was cancelled (CodeCancelledByOperator is
// also a step's, when its run was cancelled).
const (
	// CodeCancelledByOperator: an operator cancelled the run (run.cancel).
	CodeCancelledByOperator Code = "cancelled_by_operator"
	// CodePlanRejected: the planner could not plan the goal (plan.rejected).
	CodePlanRejected Code = "plan_rejected"
	// CodePlanInvalid: the proposed plan cannot be scheduled (a duplicate
	// step id, an unknown or later dependency).
	CodePlanInvalid Code = "plan_invalid"
	// CodeStepFailed: a step failed for good and its on_failure is not
	// "continue".
	CodeStepFailed Code = "step_failed"
	// CodeStepCancelled: a step was cancelled while its run went on.
	CodeStepCancelled Code = "step_cancelled"
)

// Codes of an attempt given up for another (the orchestrator's task.cancel
// carries CodeSuperseded), of the step whose attempt was given up, and of
// an operator's decision on a step.
const (
	// CodeSuperseded: the attempt was given up and its step given to
	// another attempt (the code of the task.cancel that tells its node).
	CodeSuperseded Code = "superseded"
	// CodeNodeLost: the step's attempt was given up because its node
	// failed or left the cluster.
	CodeNodeLost Code = "node_lost"
	// CodeNotStarted: the step's attempt was given up because its
	// executor had a free slot and did not start it within StartDeadline.
	CodeNotStarted Code = "not_started"
	// CodeNodeDraining: the step's attempt was given up before it could
	// start because its node is draining.
	CodeNodeDraining Code = "node_draining"
	// CodeSkippedByOperator: an operator skipped the step (step.decided
	// skip) after its attempt was lost.
	CodeSkippedByOperator Code = "skipped_by_operator"
)

// Codes of a step a gate ended without running it (CodeSkippedByOperator
// is also a gate's skip, CodePolicyDenied a deny verdict's).
const (
	// CodeGateDenied: an operator denied the step at its gate.
	CodeGateDenied Code = "gate_denied"
	// CodeGateExpired: nobody answered the step's gate before it expired,
	// and the policy skips or denies it then; a run's, when its plan gate
	// expired unapproved.
	CodeGateExpired Code = "gate_expired"
	// CodePlanDenied: an operator denied the run's plan at its plan gate
	// (a run's code).
	CodePlanDenied Code = "plan_denied"
	// CodeBudgetExceeded: the run went past a budget of the policy in
	// force — its run time, or its plan's number of steps (a run's code).
	CodeBudgetExceeded Code = "budget_exceeded"
	// CodeReplansExhausted: a step failed with on_failure replan and the
	// run's replans budget was spent (a run's code).
	CodeReplansExhausted Code = "replans_exhausted"
)

// codes is every code, in the order they were introduced.
var codes = []Code{
	CodeExitNonzero, CodeTimedOut, CodeInterrupted, CodeInterruptedNotIdempotent,
	CodePolicyDenied, CodeTransientError, CodeLogicError, CodeCancelled,
	CodeDependencyFailed, CodeRunEnded,
	CodeCancelledByOperator, CodePlanRejected, CodePlanInvalid, CodeStepFailed,
	CodeStepCancelled,
	CodeSuperseded, CodeNodeLost, CodeNotStarted, CodeNodeDraining, CodeSkippedByOperator,
	CodeGateDenied, CodeGateExpired, CodePlanDenied,
	CodeBudgetExceeded,
	CodeReplansExhausted,
	CodeNoPlanner,
	CodeBranchNotTaken,
	CodeWorktreeLost,
}

// Codes returns every code, in the order they were introduced (a copy).
func Codes() []Code { return slices.Clone(codes) }

// Known reports whether c is a code of this version. A run.finished of a
// newer leader may carry a code this version does not know; the fold keeps
// it as it is.
func (c Code) Known() bool { return slices.Contains(codes, c) }
