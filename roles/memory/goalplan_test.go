package memory_test

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// TestGoalPlannedRunIsAnOperatorsPlan: a plan file's plan that travels in
// its goal (in normal form) is accepted by the leader before any planner
// proposes it; the run is still an operator's plan of its family — its
// facts are not quarantined as a model's — as when the proposal comes
// first. A plan not in normal form is not the run's plan.
func TestGoalPlannedRunIsAnOperatorsPlan(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte("goal: g\nfamily: nightly\nsteps:\n  - id: probe\n    run: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := &history{m: memory.New()}
	h.fold("goal-run", event.GoalSubmitted, event.GoalSubmittedData{Goal: "g", PlanFile: "(the file)", Plan: p})
	h.fold("goal-run", event.PlanAccepted, event.PlanAcceptedData{Revision: 1})
	h.fold("goal-run", event.PlanProposed, event.PlanProposedData{Revision: 1, Source: "file", Plan: *p}) // the planner's, late
	h.record("goal-run", "", "ok", event.TaskSucceeded)
	h.record("goal-run", event.FactScopeFamily, "fam", event.TaskSucceeded)

	raw := *p
	raw.Steps = []event.Step{{ID: "probe", Run: "true"}} // no defaults: not normal
	h.fold("raw-run", event.GoalSubmitted, event.GoalSubmittedData{Goal: "g", PlanFile: "(the file)", Plan: &raw})
	h.fold("raw-run", event.PlanAccepted, event.PlanAcceptedData{Revision: 1})
	h.record("raw-run", "", "raw", event.TaskSucceeded)

	for _, c := range []struct{ scope, key, reason string }{
		{"goal-run", "ok", ""},
		{"family:nightly", "fam", ""},
		{"raw-run", "raw", memory.ReasonModel},
	} {
		f, err := h.m.Get(c.scope, c.key, t0)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.scope, c.key, err)
		}
		if f.Reason != c.reason {
			t.Errorf("%s/%s: quarantined %v (%q), want reason %q", c.scope, c.key, f.Quarantined, f.Reason, c.reason)
		}
	}
}
