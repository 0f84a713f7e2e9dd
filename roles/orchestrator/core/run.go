package core

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Terminal reports whether the run has reached a final status.
func (r *Run) Terminal() bool { return r.Status.Terminal() }

// Step returns the step with the given id, or nil.
func (r *Run) Step(id string) *Step {
	if i, ok := r.index[id]; ok {
		return r.Steps[i]
	}
	return nil
}

// buildIndex rebuilds the step index and the dependents lists from Steps,
// and reports the first structural problem of the plan ("" if none): a run
// or step id that breaks the protocol's grammar (ids travel in subjects:
// event.ValidRunID, event.ValidStepID), a duplicate id, a dependency
// that is unknown or does not come earlier in the (topological) step
// order, or a branch that breaks the rules (branchProblem).
func (r *Run) buildIndex() string {
	r.index = make(map[string]int, len(r.Steps))
	r.caps = false
	r.gitAt, r.gitIndexed = 0, true
	r.doneTo = 0 // a new list of steps (doneSteps)
	r.deps = make([][]int, len(r.Steps))
	r.dependents = make([][]int, len(r.Steps))
	problem := ""
	if err := event.ValidRunID(r.ID); err != nil {
		problem = err.Error()
	}
	for i, st := range r.Steps {
		if err := event.ValidStepID(st.Spec.ID); err != nil && problem == "" {
			problem = err.Error()
		}
		if _, dup := r.index[st.Spec.ID]; dup && problem == "" {
			problem = fmt.Sprintf("duplicate step id %q", st.Spec.ID)
		}
		r.index[st.Spec.ID] = i
		r.caps = r.caps || len(st.Spec.Capabilities) > 0
		if r.gitAt == 0 && isGitWorktree(st) {
			r.gitAt = i + 1
		}
	}
	for i, st := range r.Steps {
		for _, dep := range st.Spec.DependsOn {
			j, ok := r.index[dep]
			if !ok || j >= i {
				if problem == "" {
					problem = fmt.Sprintf("step %q depends on %q, which is unknown or not earlier in the plan", st.Spec.ID, dep)
				}
				r.deps[i] = append(r.deps[i], -1)
				continue
			}
			r.deps[i] = append(r.deps[i], j)
			r.dependents[j] = append(r.dependents[j], i)
		}
	}
	if problem == "" {
		problem = r.branchProblem() // branch.go
	}
	if problem == "" {
		problem = r.critiqueProblem()
	}
	return problem
}

// depsDone reports whether every dependency of step i is done: succeeded,
// skipped, or failed with on_failure "continue".
func (r *Run) depsDone(i int) bool {
	for _, j := range r.deps[i] {
		if j < 0 || !r.Steps[j].Done() {
			return false
		}
	}
	return true
}

// stepDone records that step i of r is done at t: every pending dependent
// whose dependencies are now all done becomes ready at t (and shows so),
// or ends skipped when a branch does not reach it (skipUnreached).
func (s *State) stepDone(r *Run, i int, t time.Time) {
	for _, j := range r.dependents[i] {
		if r.Steps[j].Status == StepPending && r.depsDone(j) {
			if s.skipUnreached(r, j, t) { // branch.go
				continue
			}
			r.Steps[j].ReadyAt = t
			s.touchStep(r, j)
		}
	}
}

// doneSteps is the number of steps at the front of r's plan that are
// done. It starts from what the last call saw (doneTo), which buildIndex
// resets whenever Steps changes (as it rebuilds the index): Decide then
// looks at each done step of a long plan once, not at every decision.
// Only the goroutine deciding calls it.
func (r *Run) doneSteps() int {
	if r.doneTo > len(r.Steps) {
		r.doneTo = 0
	}
	for r.doneTo < len(r.Steps) && r.Steps[r.doneTo].Done() {
		r.doneTo++
	}
	return r.doneTo
}

// Done reports whether the step counts as done for its dependents.
func (st *Step) Done() bool {
	switch st.Status {
	case StepSucceeded, StepSkipped:
		return true
	case StepFailed:
		return !st.Abort
	}
	return false
}

// Terminal reports whether the step has reached a final status.
func (st *Step) Terminal() bool { return st.Status.Terminal() }

// Active reports whether the step holds an executor slot.
func (st *Step) Active() bool { return st.Status == StepAssigned || st.Status == StepRunning }

// Idempotent reports whether a step may run again after an attempt that
// may have partly run: it says so (idempotent: true), it is a noop, or a
// creates/check guard skips it once its work is done.
func Idempotent(spec event.Step) bool {
	return spec.Idempotent || spec.Kind == event.KindNoop || spec.Creates != "" || spec.Check != ""
}
