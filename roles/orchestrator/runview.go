package orchestrator

import (
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// View returns the run's public shape. Steps come in plan order. A pending
// step of a running run whose dependencies are all done shows as "ready",
// unless it failed before and waits for a retry (it has a NotBefore): that
// one stays "pending", with its attempt count and last error.
func (r *Run) View() RunView {
	v := RunView{
		ID:         r.ID,
		Goal:       r.Goal,
		Status:     r.Status,
		Reason:     r.Reason,
		Revision:   r.Revision,
		CreatedAt:  r.CreatedAt,
		FinishedAt: timePtr(r.FinishedAt),
		Steps:      make([]StepView, len(r.Steps)),
	}
	for i, st := range r.Steps {
		status := st.Status
		if status == StepPending && st.NotBefore.IsZero() && r.Status == event.RunRunning && r.depsDone(i) {
			status = StepReady
		}
		var exit *int
		if st.ExitCode != nil {
			exit = new(*st.ExitCode)
		}
		v.Steps[i] = StepView{
			ID:         st.Spec.ID,
			Title:      st.Spec.Title,
			Subgoal:    st.Spec.Subgoal,
			Kind:       st.Spec.Kind,
			Status:     status,
			Attempt:    st.Attempt,
			Node:       st.Node,
			ExitCode:   exit,
			DependsOn:  slices.Clone(st.Spec.DependsOn),
			Error:      st.Error,
			StartedAt:  timePtr(st.StartedAt),
			FinishedAt: timePtr(st.FinishedAt),
		}
	}
	return v
}

// timePtr is nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
