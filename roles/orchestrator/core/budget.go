package core

import (
	"fmt"
	"time"
)

// overBudget stops run r, failed with CodeBudgetExceeded, when it went past
// a budget of the policy in force — its plan holds more steps than
// budgets.steps, or it has run longer than budgets.run_time since it was
// submitted — and reports true; a run with a run-time budget wakes Decide
// at its deadline. Stopping cancels what runs and compensates what can be
// undone, as any failed run (stopRun).
func (d *decider) overBudget(r *Run) bool {
	pf := d.s.Policy
	if pf == nil || pf.parsed == nil {
		return false
	}
	b := pf.parsed.Budgets
	if b.Steps > 0 {
		n := 0
		for _, st := range r.Steps {
			if st.Compensates == nil {
				n++
			}
		}
		if n > b.Steps {
			d.stopRun(r, RunFailed, CodeBudgetExceeded, fmt.Sprintf("the plan has %d steps; policy version %d allows %d a run (budgets.steps)", n, pf.Version, b.Steps))
			return true
		}
	}
	if b.RunTime > 0 && !r.CreatedAt.IsZero() {
		deadline := r.CreatedAt.Add(b.RunTime)
		if !d.now.Before(deadline) {
			d.stopRun(r, RunFailed, CodeBudgetExceeded, fmt.Sprintf("the run went past policy version %d's run time of %s (budgets.run_time)", pf.Version, b.RunTime.Round(time.Second)))
			return true
		}
		d.wakeAt(deadline)
	}
	return false
}
