package cli

import (
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestPlanShowCandidates: plan show gives the candidates' scores in a
// line, and says when a plan is open.
func TestPlanShowCandidates(t *testing.T) {
	var b strings.Builder
	renderPlan(&b, planRevision{Run: "r1", Revision: 1, Source: "llm", Plan: event.Plan{Open: true,
		Steps: []event.Step{{ID: "look", Kind: event.KindShell, Run: "ls"}}},
		Planner: &event.PlannerInfo{Model: "m", Candidates: []event.Candidate{
			{Score: 13, Risk: 1, Steps: 3},
			{Error: "no JSON object"},
			{Score: 3.5, Steps: 3, History: 0.1, Chosen: true},
			{Score: 1, Steps: 1, Denied: 1},
		}}}, 1)
	for _, want := range []string{
		"candidates: #1 13 (risk 1, 3 steps, history 0); #2 invalid; #3 3.5 (risk 0, 3 steps, history 0.1) chosen; #4 1 (risk 0, 1 steps, history 0, 1 denied)\n",
		"open: planned a step at a time",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan show lacks %q:\n%s", want, b.String())
		}
	}
}
