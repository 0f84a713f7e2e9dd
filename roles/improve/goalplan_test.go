package improve

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestWindowReadsTheGoalsPlan: a run the leader planned from the plan
// its goal carries has no plan.proposed; the window learns its family and
// what its steps set (their own timeout and retries) from the goal, so a
// default does not count a step that set its own.
func TestWindowReadsTheGoalsPlan(t *testing.T) {
	p := plant(t)
	step := event.Step{ID: "build", Kind: event.KindShell, Run: "make build", Timeout: event.Duration(time.Minute), Retries: 2}
	p.emit(event.GoalSubmitted, "r1", event.GoalSubmittedData{Goal: "g", PlanFile: "x", PlanName: "plan.yaml",
		Plan: &event.Plan{Goal: "g", Family: "release", Steps: []event.Step{step}}})
	p.attempt("r1", step, 1, failed(2))

	tel := p.telemetry()
	if len(tel.Attempts) != 1 {
		t.Fatalf("attempts %d, want 1", len(tel.Attempts))
	}
	a := tel.Attempts[0]
	if a.Family != "release" || !a.SetTimeout || !a.SetRetries {
		t.Errorf("attempt of a run planned from its goal: family %q, set timeout %v, set retries %v; want release, true, true",
			a.Family, a.SetTimeout, a.SetRetries)
	}
}
