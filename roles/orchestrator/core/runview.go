package core

import (
	"fmt"
	"slices"
	"time"
)

// View returns the run's public shape. Steps come in plan order, each as
// StepView shows it.
func (r *Run) View() RunView {
	v := RunView{
		ID:         r.ID,
		Goal:       r.Goal,
		Status:     r.Status.Wire(),
		Reason:     r.reason(),
		Revision:   r.Revision,
		CreatedAt:  r.CreatedAt,
		FinishedAt: timePtr(r.FinishedAt),
		Steps:      make([]StepView, len(r.Steps)),
		Code:       r.Code.Wire(),
	}
	for i := range r.Steps {
		v.Steps[i] = r.StepView(i)
	}
	return v
}

// StepStatus returns the status step i shows: its status, except that a
// pending step of a running run whose dependencies are all done shows as
// "ready" — unless it failed before and waits for a retry (it has a
// NotBefore): that one stays "pending", with its attempt count and last
// error.
func (r *Run) StepStatus(i int) StepStatus {
	st := r.Steps[i]
	if st.Status == StepPending && st.NotBefore.IsZero() && r.Status == RunRunning && r.depsDone(i) {
		return StepReady
	}
	return st.Status
}

// StepView returns the public shape of step i (its position in the plan).
func (r *Run) StepView(i int) StepView {
	st := r.Steps[i]
	var exit *int
	if st.ExitCode != nil {
		exit = new(*st.ExitCode)
	}
	return StepView{
		ID:         st.Spec.ID,
		Title:      st.Spec.Title,
		Subgoal:    st.Spec.Subgoal,
		Kind:       st.Spec.Kind,
		Status:     r.StepStatus(i).Wire(),
		Attempt:    st.Attempt,
		Node:       st.Node,
		ExitCode:   exit,
		DependsOn:  slices.Clone(st.Spec.DependsOn),
		Error:      st.Error,
		StartedAt:  timePtr(st.StartedAt),
		FinishedAt: timePtr(st.FinishedAt),
		Code:       st.Code.Wire(),
		Reassigned: st.Reassigned,
		Wait:       st.wait(),
		Approvers:  slices.Clone(st.Approvers),
		Edits:      slices.Clone(st.Edits),
		Evidence:   st.evidence(),
		Critique:   cloneVerdict(st.Critique),
	}
}

// wait is the step's wait reason while it is pending.
func (st *Step) wait() string {
	if st.Status != StepPending {
		return ""
	}
	return st.Wait
}

// reason is the run's Reason once it ended; while it runs, the
// compensation it runs, why it is paused, the plan revision it waits for
// after a step asked for a replan, or the first of its pending steps that
// waits for an executor offering its capabilities, if one does
// (Run.Wait).
func (r *Run) reason() string {
	if r.Reason != "" || r.Status.Terminal() {
		return r.Reason
	}
	if c := r.compensatingReason(); c != "" {
		return c
	}
	if r.Status == RunPaused {
		return r.PauseReason
	}
	if rp := r.Replanning; rp != nil {
		if r.waitsForNext() { // react.go
			return fmt.Sprintf("waiting for the next steps (plan revision %d) from the planner", rp.Revision)
		}
		return fmt.Sprintf("waiting for plan revision %d from the planner (replan %d)", rp.Revision, r.Replans)
	}
	return r.Wait
}

// ShownReason is the reason RunView and RunSummary show (reason): why the
// run ended, or while it goes on, which compensation it runs or which step
// waits for which capability.
func (r *Run) ShownReason() string { return r.reason() }

// timePtr is nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Summary returns the run without its steps, its step counts computed from
// them (StepStatus). CreatedAt is the run's CreatedAt, the time its
// goal.submitted was signed; a listing by stream time (the run index) sets
// its own.
func (r *Run) Summary() RunSummary {
	counts := map[string]int{}
	for i := range r.Steps {
		counts[r.StepStatus(i).Wire()]++
	}
	return RunSummary{
		ID:         r.ID,
		Goal:       r.Goal,
		Status:     r.Status.Wire(),
		Reason:     r.reason(),
		Revision:   r.Revision,
		Steps:      len(r.Steps),
		StepCounts: counts,
		CreatedAt:  r.CreatedAt,
		FinishedAt: timePtr(r.FinishedAt),
		Code:       r.Code.Wire(),
	}
}
