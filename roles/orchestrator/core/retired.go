package core

// Retired steps. A replan revision replaces a run's plan: a step it
// keeps unchanged (same id and spec) that succeeded keeps its state, and
// every other step of the old plan is gone from the plan — but what such
// a step did is not: a file edit that succeeded (or failed after it
// started), or a shell step with compensate that succeeded, changed the
// world. acceptReplan keeps each such attempt in Run.Retired (retire),
// out of the plan (not scheduled, not shown, not sent to the planner), so
// that compensation undoes it with the rest when the run fails or is
// cancelled later: undoSteps lists the plan's steps and the retired ones,
// and undoOrder orders them by their ends as always. A step a revision
// keeps under its id with another spec goes on counting its attempts, so
// the retired attempt and the new ones are told apart by attempt
// (Compensation.Attempt), and the later is undone first.

// retire moves the steps of r's current plan that next (the accepted
// revision's steps) does not carry over, and that compensation would
// undo, to r.Retired.
func (r *Run) retire(next []*Step) {
	kept := make(map[*Step]bool, len(next))
	for _, st := range next {
		kept[st] = true
	}
	for _, st := range r.Steps {
		if !kept[st] && undoable(st) {
			r.Retired = append(r.Retired, st)
		}
	}
}

// undoSteps are the steps compensation looks at: the plan's, then the
// retired ones.
func (r *Run) undoSteps() []*Step {
	if len(r.Retired) == 0 {
		return r.Steps
	}
	return append(append(make([]*Step, 0, len(r.Steps)+len(r.Retired)), r.Steps...), r.Retired...)
}

// retired returns the retired step of r with id and attempt, or nil.
func (r *Run) retired(id string, attempt int) *Step {
	for _, st := range r.Retired {
		if st.Spec.ID == id && st.Attempt == attempt {
			return st
		}
	}
	return nil
}
