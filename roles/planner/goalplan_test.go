package planner

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// TestGoalPlanProposedAfterGrace: a goal that carries its plan file's
// plan in normal form is planned by the leader from the goal; a planner
// proposes the file only when no leader accepted it (an older leader's
// plan), and only after GoalPlanGrace, so that its proposal does not
// share the outbox, the stream and the ledger with the acceptance on the
// way to the first process. A goal without the plan is proposed at once.
func TestGoalPlanProposedAfterGrace(t *testing.T) {
	ob := &outbox{}
	p := start(t, ob, Config{})
	var l ledger
	file := readExample(t, "hello.yaml")
	carried, err := plan.Parse("hello.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	carried.Goal = "hello"
	begin := time.Now()
	fold(p, l.event(event.GoalSubmitted, "carried", event.GoalSubmittedData{Goal: "hello", PlanFile: file, PlanName: "hello.yaml", Plan: carried}))
	fold(p, l.event(event.GoalSubmitted, "plain", event.GoalSubmittedData{Goal: "hello", PlanFile: file, PlanName: "hello.yaml"}))
	p.Settled(true)

	proposed(t, one(t, ob, "plain"))
	if n := len(ob.byRun("carried")); n != 0 && time.Since(begin) < GoalPlanGrace {
		t.Fatalf("the carried plan was proposed %s after its goal, before the grace of %s", time.Since(begin), GoalPlanGrace)
	}
	got := proposed(t, one(t, ob, "carried"))
	if took := time.Since(begin); took < GoalPlanGrace {
		t.Errorf("the carried plan was proposed %s after its goal, before the grace of %s", took, GoalPlanGrace)
	}
	if got.Revision != 1 || got.Source != "file" || len(got.Plan.Steps) != len(carried.Steps) {
		t.Errorf("proposal %+v", got)
	}
}

// TestGoalPlanAcceptedIsNotProposed: a run the leader accepted from the
// plan its goal carries is not proposed again when the grace ends (the
// ledger holds its plan once, in the goal); one the leader has not
// accepted (an older leader's, which waits for a proposal) still is.
func TestGoalPlanAcceptedIsNotProposed(t *testing.T) {
	ob := &outbox{}
	p := start(t, ob, Config{})
	var l ledger
	file := readExample(t, "hello.yaml")
	carried, err := plan.Parse("hello.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	carried.Goal = "hello"
	goal := event.GoalSubmittedData{Goal: "hello", PlanFile: file, PlanName: "hello.yaml", Plan: carried}
	fold(p, l.event(event.GoalSubmitted, "accepted", goal))
	fold(p, l.event(event.GoalSubmitted, "waiting", goal))
	fold(p, l.event(event.PlanAccepted, "accepted", event.PlanAcceptedData{Revision: 1}))
	p.Settled(true)

	proposed(t, one(t, ob, "waiting"))
	if ds := ob.byRun("accepted"); len(ds) != 0 {
		t.Fatalf("the accepted run was proposed again: %d drafts, first %s", len(ds), ds[0].Type)
	}
}
