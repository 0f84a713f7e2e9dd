package core

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// InterruptedPrefix starts the Error of an interrupted attempt, for
// people (event.LegacyInterruptedPrefix). The fold reads
// TaskFinishedData.Interrupted, never the text.
const InterruptedPrefix = event.LegacyInterruptedPrefix

// ReasonNotIdempotent is the error of a step that was interrupted and is not
// re-run because it is not idempotent.
const ReasonNotIdempotent = "interrupted and not idempotent: not re-run"

// foldTaskFinished records the result of the current attempt. A failure is
// retried (the step goes back to pending with a backoff) or becomes final;
// see retryable. An outcome this version does not know counts as a
// failure, so that the step does not wait for ever.
func foldTaskFinished(s *State, ev event.Event) {
	var d event.TaskFinishedData
	if !s.decode(ev, &d) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if !s.currentAttempt(st, d.Attempt, signer(ev, d.Node)) {
		return
	}
	s.attemptEnded(r, i, d, ev)
}

// attemptEnded folds d, the result of the current attempt of step i of r,
// ended by ev: a task.finished, or a critique's verdict (critique.go).
func (s *State) attemptEnded(r *Run, i int, d event.TaskFinishedData, ev event.Event) {
	st := r.Steps[i]
	outcome, ok := taskStatusFromWire(d.Status)
	if !ok || !outcome.Terminal() {
		outcome = TaskFailed
	}
	if !s.taskMay(st, outcome) {
		return
	}
	var to StepStatus
	retry, code, reason := false, Code(""), d.Error
	switch outcome {
	case TaskSucceeded:
		to = StepSucceeded
	case TaskSkipped:
		to = StepSkipped
	case TaskCancelled:
		to, code = StepCancelled, cancelCode(r, st)
	default:
		// Attempts given up for another (Reassigned) are not the step's
		// failures: they do not count against its retries.
		counted := d
		counted.Attempt -= st.Reassigned
		retry, code, reason = retryable(st.Spec, counted)
		to = StepFailed
		if retry {
			to = StepPending
		}
	}
	if !s.setStepStatus(r, i, to) {
		return
	}
	if st.StartedAt.IsZero() {
		st.StartedAt = d.Started
	}
	st.FinishedAt = ev.Time
	exit := d.ExitCode
	st.ExitCode = &exit
	st.Error, st.Code, st.Class, st.Tail = reason, code, "", ""
	s.keepTargetTail(r, i, d.OutputTail)
	foldEdits(st, ev.Seq, d)
	foldSources(st, to, d) // research.go
	switch {
	case outcome == TaskFailed:
		st.Class, st.Tail = failureClass(d), d.OutputTail
		s.failed(r, i, d.Attempt, retry, ev.Time)
	case to != StepCancelled:
		observe(r, st, d.OutputTail) // react.go
		s.stepDone(r, i, ev.Time)
	}
}

// cancelCode is the code of an attempt its executor reports cancelled: the
// executor does that when the leader asked it to, for a run an operator
// cancelled or one that is failing.
func cancelCode(r *Run, st *Step) Code {
	switch {
	case r.CancelRequested:
		return CodeCancelledByOperator
	case st.CancelSent == st.Attempt:
		return CodeRunEnded
	}
	return CodeCancelled
}

// failed routes a failed attempt of step i, now pending or failed: a retry
// waits for its backoff; a final failure with on_failure "continue" lets
// dependents run; a final logic failure with on_failure "replan" asks for
// a new plan revision; any other fails the run (Decide emits that).
func (s *State) failed(r *Run, i, attempt int, retry bool, t time.Time) {
	st := r.Steps[i]
	if retry {
		st.NotBefore = t.Add(Backoff(r.ID, st.Spec, attempt))
		st.ReadyAt = st.NotBefore
		return
	}
	st.Abort = st.Spec.OnFailure != event.OnFailureContinue
	st.Replan = st.Spec.OnFailure == event.OnFailureReplan && st.Class == event.ClassLogic && st.Code != CodePolicyDenied
	routeFailure(st) // branch.go
	if !st.Abort {
		s.stepDone(r, i, t)
	}
}

// failureClass is the reported class; an unclassified failure is transient
// if it timed out and logic otherwise.
func failureClass(d event.TaskFinishedData) event.FailureClass {
	switch {
	case d.Class != "":
		return d.Class
	case d.TimedOut:
		return event.ClassTransient
	default:
		return event.ClassLogic
	}
}

// interrupted reports whether the executor could not finish the attempt
// and it may have partly run (the process was killed, the node restarted
// mid-step).
func interrupted(d event.TaskFinishedData) bool { return d.Interrupted }

// retryable decides whether a failed attempt is retried, and gives the
// failure's code and description.
//
//   - policy: never retried.
//   - an interruption: re-run only if the step is idempotent (Idempotent:
//     marked so, a noop, or guarded by creates/check), then up to
//     Retries+1 attempts.
//   - transient: retried while attempt <= Retries (attempts are 1-based, so
//     Retries 2 allows 3 attempts).
//   - logic (and anything unknown): retried only with on_failure "retry",
//     while attempt <= Retries. With on_failure "replan" the final failure
//     asks for a new plan revision (see State.failed and Decide).
func retryable(spec event.Step, d event.TaskFinishedData) (bool, Code, string) {
	reason := d.Error
	if reason == "" {
		reason = fmt.Sprintf("exit code %d", d.ExitCode)
	}
	class := failureClass(d)
	switch {
	case class == event.ClassPolicy:
		return false, CodePolicyDenied, reason
	case interrupted(d):
		// An interruption (executor crash, node loss) is not the step's
		// fault: an idempotent step gets one more attempt than its retries
		// allow, so that even retries: 0 survives a crash once.
		if !Idempotent(spec) {
			return false, CodeInterruptedNotIdempotent, ReasonNotIdempotent
		}
		return d.Attempt <= spec.Retries+1, CodeInterrupted, reason
	case class == event.ClassTransient:
		return d.Attempt <= spec.Retries, failureCode(d), reason
	default:
		return spec.OnFailure == event.OnFailureRetry && d.Attempt <= spec.Retries, failureCode(d), reason
	}
}

// failureCode is the code of a failure that is neither a policy denial nor
// an interruption.
func failureCode(d event.TaskFinishedData) Code {
	switch {
	case d.TimedOut:
		return CodeTimedOut
	case d.ExitCode > 0:
		return CodeExitNonzero
	case failureClass(d) == event.ClassTransient:
		return CodeTransientError
	}
	return CodeLogicError
}
