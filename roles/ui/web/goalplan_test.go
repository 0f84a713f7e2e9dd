package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// A run planned from its goal (the goal carries its plan file's plan in
// normal form) shows that plan before, or without, any planner's
// proposal: the page has its revision 1 and the live stream draws it.
func TestRunPlannedFromItsGoal(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte("goal: carried\nsteps:\n  - id: fetch\n    run: make fetch\n  - id: build\n    run: make\n    depends_on: [fetch]\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := newLedger()
	l.change(func() {
		l.runs = append(l.runs, api.RunSummary{ID: runID, Goal: "carried", Status: event.RunRunning, Revision: 1, Steps: 2, CreatedAt: t0, StepCounts: map[string]int{"running": 1, "pending": 1}})
		l.steps[runID] = []api.Step{{ID: "fetch", Kind: event.KindShell, Status: "running"}, {ID: "build", Kind: event.KindShell, Status: "pending", DependsOn: []string{"fetch"}}}
		l.appendLine(runID, event.GoalSubmitted, event.GoalSubmittedData{Goal: "carried", PlanFile: "(the file)", PlanName: "p.yaml", Plan: p})
		l.appendLine(runID, event.PlanAccepted, event.PlanAcceptedData{Revision: 1})
	})
	srv := newServer(t, l)
	code, _, body := get(t, srv.URL+"/runs/"+runID+"?rev=1")
	if code != http.StatusOK || strings.Contains(body, "No plan yet") || !strings.Contains(body, "build") {
		t.Fatalf("revision 1 of a run planned from its goal: %d %s", code, body)
	}
	ch, stop := stream(t, srv.URL+"/runs/"+runID+"/live?rev=1", "")
	defer stop()
	var f struct {
		Nodes map[string]struct {
			S string `json:"s"`
		}
	}
	if err := json.Unmarshal([]byte(next(t, ch, "state").data), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 2 || f.Nodes["fetch"].S != "running" {
		t.Fatalf("first frame: %+v, want fetch running, build", f.Nodes)
	}
}
