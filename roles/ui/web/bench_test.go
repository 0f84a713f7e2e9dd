package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/ui/web"
)

// fanOut is a running run of n steps: a setup step and n-1 steps of one
// subgoal after it, a tenth of them done.
func fanOut(l *ledger, n int) {
	plan := event.Plan{Subgoals: []event.Subgoal{{ID: "work", Title: "fan out"}}, Steps: []event.Step{{ID: "setup", Kind: event.KindShell, Run: "make deps"}}}
	steps := []api.Step{{ID: "setup", Kind: event.KindShell, Status: "succeeded"}}
	for i := range n - 1 {
		id := fmt.Sprintf("w%d", i)
		plan.Steps = append(plan.Steps, event.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Run: fmt.Sprintf("curl -s https://h/%d", i), DependsOn: []string{"setup"}})
		status := "pending"
		if i%10 == 0 {
			status = "succeeded"
		}
		steps = append(steps, api.Step{ID: id, Subgoal: "work", Kind: event.KindShell, Status: status, DependsOn: []string{"setup"}})
	}
	l.addRun(api.RunSummary{ID: runID, Goal: "many", Status: event.RunRunning, CreatedAt: t0}, plan, steps)
}

// benchRunPage measures the server's time for a run page of n steps: the
// read of the run and its plan, the (cached) layout, the HTML. The issue's
// targets: 1 s for 5,000 steps, 200 ms for 200.
func benchRunPage(b *testing.B, n int, query string) {
	l := newLedger()
	fanOut(l, n)
	s, err := web.New(l.source(), web.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mux := http.NewServeMux()
	s.Register(mux)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/runs/"+runID+query, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkRunPage200(b *testing.B)      { benchRunPage(b, 200, "") }
func BenchmarkRunPage5000(b *testing.B)     { benchRunPage(b, 5000, "") }
func BenchmarkRunPage5000Full(b *testing.B) { benchRunPage(b, 5000, "?full=1") }
