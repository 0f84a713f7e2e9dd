package core

import (
	"github.com/agentic-dev/agentic/bus/event"
)

// foldEdits records, from a task.finished folded for st's current attempt,
// what compensation needs: the ledger position of the attempt's end (the
// order in which steps are undone) and the file edits it reported.
func foldEdits(st *Step, seq uint64, d event.TaskFinishedData) {
	st.EndSeq = seq
	st.FileEdits = d.Edits
}

// addCompensation makes room, in the fold of a task.assigned that carries
// Compensates, for the compensation step it names: the first assignment of
// a compensation adds the step to its run, pending, after the plan's
// steps (it is shown, scheduled and folded like any other step from then
// on), and a later one (a retry) must name the same compensated attempt.
// It reports whether the assignment may be folded; one that names an
// unknown run or step, a step that is itself a compensation, a step id
// taken by another step, or an attempt already compensated by another
// step is counted ignored. A run records at most one compensation per
// compensated attempt: the fold never adds two.
func (s *State) addCompensation(run string, d event.TaskAssignedData) bool {
	c := d.Compensates
	r := s.Runs[run]
	if r == nil || r.Status != RunRunning || c.Step == "" {
		s.Ignored++
		return false
	}
	target, ok := r.index[c.Step]
	if (!ok && r.retired(c.Step, c.Attempt) == nil) || (ok && r.Steps[target].Compensates != nil) || event.ValidStepID(d.Step.ID) != nil {
		s.Ignored++
		return false
	}
	if i, ok := r.index[d.Step.ID]; ok {
		cs := r.Steps[i].Compensates
		if cs == nil || cs.Step != c.Step || cs.Attempt != c.Attempt {
			s.Ignored++
			return false
		}
		return true
	}
	if r.compensation(c.Step, c.Attempt) != nil || d.Attempt != 1 || d.Node == "" {
		s.Ignored++ // compensated by another step already, or not a first attempt
		return false
	}
	comp := *c
	comp.Edits = append([]event.FileEdit(nil), c.Edits...)
	spec := d.Step
	spec.DependsOn = nil
	r.Steps = append(r.Steps, &Step{Spec: spec, Status: StepPending, Compensates: &comp})
	r.buildIndex()
	s.touchPlan(r) // a step was added: the run's step list changed
	return true
}

// compensation returns the step of r that compensates attempt of step,
// or nil.
func (r *Run) compensation(step string, attempt int) *Step {
	for _, st := range r.Steps {
		if c := st.Compensates; c != nil && c.Step == step && c.Attempt == attempt {
			return st
		}
	}
	return nil
}
