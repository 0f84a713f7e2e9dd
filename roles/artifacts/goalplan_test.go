package artifacts

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// TestGoalPlannedRunHasItsPlansFamily: a plan file's plan that travels
// in its goal is accepted before any planner proposes it; the run still
// belongs to the plan's family, so a family input finds its artifacts.
func TestGoalPlannedRunHasItsPlansFamily(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte("goal: g\nfamily: nightly\nsteps:\n  - id: make\n    run: make\n"))
	if err != nil {
		t.Fatal(err)
	}
	x := &folder{t: t, f: New(), at: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	x.fold(event.GoalSubmitted, "r1", event.GoalSubmittedData{Goal: "g", PlanFile: "(the file)", Plan: p})
	x.fold(event.PlanAccepted, "r1", event.PlanAcceptedData{Revision: 1})
	x.fold(event.PlanProposed, "r1", event.PlanProposedData{Revision: 1, Source: "file", Plan: *p}) // the planner's, late
	x.fold(event.ArtifactStored, "r1", event.ArtifactStoredData{Name: "report.md", Size: 3, SHA256: sha('a'), Object: "up/a", Step: "make", Attempt: 1, Retention: event.RetentionRun})
	x.fold(event.RunFinished, "r1", event.RunFinishedData{Status: event.RunSucceeded})
	got, err := x.f.Resolve("r9", event.ArtifactInput{Family: "nightly", Name: "report.md"})
	if err != nil || got.Run != "r1" {
		t.Fatalf("family input: %+v, %v (want r1's)", got, err)
	}
}
