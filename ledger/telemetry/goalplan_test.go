package telemetry_test

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestProjectionOfARunPlannedFromItsGoal: a plan file's plan that travels
// in its goal is accepted before the planner's proposal (which comes half
// a second later, after a short run has ended): the run's records still
// carry the plan's family and goal.
func TestProjectionOfARunPlannedFromItsGoal(t *testing.T) {
	l := &ledger{at: time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)}
	const run = "0190bbbb-0000-7000-8000-000000000009"
	p := event.Plan{Goal: "nightly build", Family: "nightly", Steps: []event.Step{{ID: "make", Kind: event.KindShell, Run: "make", OnFailure: event.OnFailureAbort}}}
	l.add(event.GoalSubmitted, run, "alice", event.GoalSubmittedData{Goal: "nightly build", PlanFile: "(the file)", PlanName: "nightly.yaml", Plan: &p})
	l.add(event.PlanAccepted, run, "orch", event.PlanAcceptedData{Revision: 1})
	l.add(event.TaskAssigned, run, "orch", event.TaskAssignedData{Step: p.Steps[0], Attempt: 1, Node: "node-b"})
	l.add(event.TaskFinished, run, "node-b", event.TaskFinishedData{Step: "make", Attempt: 1, Node: "node-b", Status: event.TaskFailed,
		Class: event.ClassLogic, ExitCode: 2, Error: "exit status 2", Duration: event.Duration(time.Second)})
	l.add(event.RunFinished, run, "orch", event.RunFinishedData{Status: event.RunFailed, Code: "step_failed", Reason: "step make failed"})
	l.add(event.PlanProposed, run, "planner-a", event.PlanProposedData{Revision: 1, Source: "file", Plan: p})
	got := project(t, l.evs)
	if len(got) == 0 {
		t.Fatal("no records")
	}
	for _, r := range got {
		if r.Family != "nightly" || r.Goal != "nightly build" {
			t.Errorf("%s lacks the run's family or goal: %+v", r.Event, r)
		}
	}
}
