package orchestrator

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// InterruptedPrefix starts the Error of a TaskFinished (class transient) that
// an executor reports for an attempt it could not finish and that may have
// partly run: the process was killed, the node restarted mid-step. The
// orchestrator re-runs such a step only if it is idempotent; otherwise the
// step fails with ReasonNotIdempotent (an approval gate replaces that in a
// later issue). Executors write e.g. "interrupted: executor restarted".
const InterruptedPrefix = "interrupted"

// ReasonNotIdempotent is the error of a step that was interrupted and is not
// re-run because it is not idempotent.
const ReasonNotIdempotent = "interrupted and not idempotent: not re-run"

// foldTaskFinished records the result of the current attempt. A failure is
// retried (the step goes back to pending with a backoff) or becomes final;
// see retryable.
func foldTaskFinished(s *State, ev event.Event) {
	var d event.TaskFinishedData
	if !s.decode(ev, &d) {
		return
	}
	r, i, st := s.step(ev.Run, d.Step)
	if !s.currentAttempt(st, d.Attempt, signer(ev, d.Node)) {
		return
	}
	s.touchStep(r, i)
	if st.StartedAt.IsZero() {
		st.StartedAt = d.Started
	}
	st.FinishedAt = ev.Time
	exit := d.ExitCode
	st.ExitCode = &exit
	st.Error, st.Class = d.Error, ""
	switch d.Status {
	case event.TaskSucceeded:
		st.Status = StepSucceeded
		s.stepDone(r, i, ev.Time)
	case event.TaskSkipped:
		st.Status = StepSkipped
		s.stepDone(r, i, ev.Time)
	case event.TaskCancelled:
		st.Status = StepCancelled
	default:
		s.failAttempt(r, i, d, ev.Time)
	}
}

// failAttempt routes a failed attempt of step i: back to pending after a
// backoff while it may be retried, otherwise failed for good. A final
// failure with on_failure "continue" lets dependents run; any other fails
// the run (Decide emits that).
func (s *State) failAttempt(r *Run, i int, d event.TaskFinishedData, t time.Time) {
	st := r.Steps[i]
	st.Class = failureClass(d)
	retry, reason := retryable(st.Spec, d)
	st.Error = reason
	if retry {
		st.Status = StepPending
		st.NotBefore = t.Add(Backoff(r.ID, st.Spec, d.Attempt))
		st.ReadyAt = st.NotBefore
		return
	}
	st.Status = StepFailed
	st.Abort = st.Spec.OnFailure != event.OnFailureContinue
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

// retryable decides whether a failed attempt is retried, and describes the
// failure.
//
//   - policy: never retried.
//   - transient: retried while attempt <= Retries (attempts are 1-based, so
//     Retries 2 allows 3 attempts), except an interruption (Error starting
//     with InterruptedPrefix) of a step that is not idempotent.
//   - logic (and anything unknown): retried only with on_failure "retry",
//     while attempt <= Retries. on_failure "replan" aborts until replanning
//     exists.
func retryable(spec event.Step, d event.TaskFinishedData) (bool, string) {
	reason := d.Error
	if reason == "" {
		reason = fmt.Sprintf("exit code %d", d.ExitCode)
	}
	switch failureClass(d) {
	case event.ClassPolicy:
		return false, reason
	case event.ClassTransient:
		if strings.HasPrefix(d.Error, InterruptedPrefix) {
			// An interruption (executor crash, node loss) is not the step's
			// fault: an idempotent step gets one more attempt than its
			// retries allow, so that even retries: 0 survives a crash once.
			if !spec.Idempotent {
				return false, ReasonNotIdempotent
			}
			return d.Attempt <= spec.Retries+1, reason
		}
		return d.Attempt <= spec.Retries, reason
	default:
		return spec.OnFailure == event.OnFailureRetry && d.Attempt <= spec.Retries, reason
	}
}
