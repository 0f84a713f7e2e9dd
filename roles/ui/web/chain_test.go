package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// A run of 3,000 chained steps draws the chain as one node with its counts
// and a small page; the node expands to the steps one by one.
func TestLongChainIsGrouped(t *testing.T) {
	l := newLedger()
	plan := event.Plan{Subgoals: []event.Subgoal{{ID: "work", Title: "one after another"}}}
	var steps []api.Step
	prev := []string(nil)
	for i := range 3000 {
		id := fmt.Sprintf("c%d", i)
		plan.Steps = append(plan.Steps, event.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Run: fmt.Sprintf("./migrate %d", i), DependsOn: prev})
		status := "pending"
		if i < 1200 {
			status = "succeeded"
		}
		steps = append(steps, api.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Status: status, DependsOn: prev})
		prev = []string{id}
	}
	l.addRun(api.RunSummary{ID: runID, Goal: "a long chain", Status: event.RunRunning, CreatedAt: t0}, plan, steps)
	srv := newServer(t, l)
	code, _, body := get(t, srv.URL+"/runs/"+runID)
	if code != http.StatusOK {
		t.Fatalf("%d %.500s", code, body)
	}
	if n := strings.Count(body, `class="node `); n > 5 || len(body) > 100_000 {
		t.Fatalf("%d nodes drawn, %d bytes: the chain is not grouped", n, len(body))
	}
	if !strings.Contains(body, "×3000") || !strings.Contains(body, "1200 succeeded") || !strings.Contains(body, "1800 pending") {
		t.Fatal("the chain's node does not count its steps by state")
	}
	if !strings.Contains(body, `href="/runs/`+runID+`?expand=group%2Fc0"`) {
		t.Fatal("the chain's node does not link to its expansion")
	}
	_, _, expanded := get(t, srv.URL+"/runs/"+runID+"?expand=group%2Fc0")
	if n := strings.Count(expanded, `class="node `); n != 3000 {
		t.Fatalf("expanded: %d nodes drawn, want 3000", n)
	}
}
