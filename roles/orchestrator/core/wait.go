package core

import (
	"sort"
	"strings"
)

// waitFor says why a step that requires caps cannot be assigned now and
// will not be until the executors change: no schedulable executor offers
// them all. "" when one does, or when caps is empty (any executor will do;
// waiting for a free slot is not worth a reason).
func (s *State) waitFor(caps []string) string {
	if len(caps) == 0 {
		return ""
	}
	for node, ex := range s.Executors {
		if s.schedulable(node, ex) && ex.Offers(caps) {
			return ""
		}
	}
	c := append([]string(nil), caps...)
	sort.Strings(c)
	return "no live executor offers " + strings.Join(c, ", ")
}

// setWait recomputes the wait reason of step i of r, recording a change,
// and the run's (Run.Wait). Only a pending step has one.
func (s *State) setWait(r *Run, i int) {
	st := r.Steps[i]
	w := ""
	if st.Status == StepPending {
		w = s.waitFor(st.Spec.Capabilities)
	}
	if w == st.Wait {
		return
	}
	st.Wait = w
	s.touchStep(r, i)
	r.Wait = ""
	for _, st := range r.Steps {
		if st.Wait != "" && st.Status == StepPending {
			r.Wait = "step " + st.Spec.ID + ": " + st.Wait
			break
		}
	}
}

// refreshWaits recomputes the wait reasons of the pending steps that
// require capabilities, in every live run (the executors changed).
func (s *State) refreshWaits() {
	for _, r := range s.activeRuns() {
		if !r.caps {
			continue
		}
		for i, st := range r.Steps {
			if st.Status == StepPending && len(st.Spec.Capabilities) > 0 {
				s.setWait(r, i)
			}
		}
	}
}
