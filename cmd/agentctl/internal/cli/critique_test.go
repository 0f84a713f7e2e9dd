package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator"
)

// TestRunShowsVerdicts: run show prints a critique step's verdict and
// judgement, and why there is none.
func TestRunShowsVerdicts(t *testing.T) {
	run := &api.Run{ID: "r1", Goal: "serve", Status: event.RunFailed, Steps: []api.Step{
		{ID: "serve", Kind: event.KindShell, Status: "succeeded", Attempt: 1},
		{ID: "review", Kind: event.KindCritique, Status: "succeeded", Attempt: 1, DependsOn: []string{"serve"},
			Critique: &orchestrator.Verdict{Verdict: event.VerdictPass, Judgement: "It answers 200."}},
		{ID: "again", Kind: event.KindCritique, Status: "failed", Attempt: 2, DependsOn: []string{"serve"},
			Error: "critique of serve has no verdict: no_planner: nobody", Critique: &orchestrator.Verdict{Verdict: event.VerdictError, Code: event.NoPlanner, Error: "nobody"}},
	}}
	var b bytes.Buffer
	if err := renderRun(&b, run, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"review verdict: pass: It answers 200.", "again verdict: error [no_planner]: nobody"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("run show lacks %q:\n%s", want, b.String())
		}
	}
}
