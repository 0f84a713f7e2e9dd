package planner

import (
	"context"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// TestNextRequestPlannedLikeAReplan: a request for the next revision of
// an open plan (reason next) is claimed and planned like a replan; the
// source gets the results, the proposal carries no failure, and the
// plan's openness survives normalization.
func TestNextRequestPlannedLikeAReplan(t *testing.T) {
	b := &bus{}
	got := make(chan event.PlanReplanRequestedData, 1)
	src := replanFunc{
		SourceFunc: SourceFunc{name: "llm", f: func(context.Context, string, event.GoalSubmittedData) (*event.Plan, error) {
			return &event.Plan{Steps: []event.Step{{ID: "a", Run: "ls"}}, Open: true}, nil
		}},
		replan: func(_ context.Context, _ string, req event.PlanReplanRequestedData) (*event.Plan, string, *event.PlannerInfo, error) {
			got <- req
			return &event.Plan{Steps: []event.Step{{ID: "a", Run: "ls"}, {ID: "b", Run: "cat x", DependsOn: []string{"a"}}}, Open: true},
				"x is there", &event.PlannerInfo{Model: "m"}, nil
		},
	}
	p := b.planner(t, "p1", Config{Text: src, ClaimTimeout: time.Hour})
	g := event.GoalSubmittedData{Goal: "g", Text: "g"}
	b.submit("r", g)
	p.Settled(true)
	poll.Eventually(t, 10*time.Second, "revision 1", func() bool { return len(b.of(event.PlanProposed)) == 1 })
	var d event.PlanProposedData
	if err := b.of(event.PlanProposed)[0].Decode(&d); err != nil || !d.Plan.Open {
		t.Fatalf("revision 1 %+v (%v): want it open", d, err)
	}
	b.add(event.PlanReplanRequested, "r", event.PlanReplanRequestedData{Revision: 1, Goal: g, Source: "llm", Reason: event.ReplanNext,
		Plan: event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindShell, Run: "ls"}}, Open: true}, Done: []string{"a"},
		Results: []event.StepResult{{Step: "a", Status: event.StepSucceeded, OutputTail: "x\n"}}})
	poll.Eventually(t, 10*time.Second, "revision 2", func() bool { return len(b.of(event.PlanProposed)) == 2 })
	if req := <-got; len(req.Results) != 1 || req.Results[0].OutputTail != "x\n" {
		t.Fatalf("request %+v", req)
	}
	d = event.PlanProposedData{}
	if err := b.of(event.PlanProposed)[1].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Revision != 2 || d.Replaces != 1 || d.Failure != nil || !d.Plan.Open || d.Rationale != "x is there" || len(d.Plan.Steps) != 2 {
		t.Fatalf("revision 2 %+v", d)
	}
}
