package node_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// critiquePlan is a plan file with a shell step and a critique of it.
const critiquePlan = `goal: greet
steps:
  - id: greet
    run: echo hello world
  - id: review
    kind: critique
    target: greet
    criteria: %s
`

// TestCritiqueStepInAPlanFile: a plan file's critique step is judged by
// the planner's model: a pass lets the run succeed, a fail (on_failure
// abort) fails it with the judgement in the reason; both verdicts and
// judgements show on the step, and the runs replay without divergence
// and without asking the model.
func TestCritiqueStepInAPlanFile(t *testing.T) {
	var calls atomic.Int64
	srv := llmtest.Server(t, func(prompt string) string {
		calls.Add(1)
		switch {
		case !strings.Contains(prompt, "hello world"):
			return `{"verdict": "fail", "judgement": "The target's output is not in the prompt."}`
		case strings.Contains(prompt, "says goodbye"):
			return `{"verdict": "fail", "judgement": "It says hello, not goodbye."}`
		}
		return `{"verdict": "pass", "judgement": "It says hello."}`
	})
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)

	pass := n.WaitRun(t, n.Submit(t, "pass.yaml", strings.Replace(critiquePlan, "%s", "the output says hello", 1)), 30*time.Second)
	if pass.Status != event.RunSucceeded || len(pass.Steps) != 2 {
		t.Fatalf("run %s: %s (%s), %d steps", pass.ID, pass.Status, pass.Reason, len(pass.Steps))
	}
	if c := pass.Steps[1].Critique; pass.Steps[1].ID != "review" || pass.Steps[1].Status != "succeeded" || c == nil ||
		c.Verdict != event.VerdictPass || c.Judgement != "It says hello." || pass.Steps[1].Node != "" {
		t.Fatalf("review step %+v, verdict %+v", pass.Steps[1], c)
	}

	fail := n.WaitRun(t, n.Submit(t, "fail.yaml", strings.Replace(critiquePlan, "%s", "the output says goodbye", 1)), 30*time.Second)
	if fail.Status != event.RunFailed || !strings.Contains(fail.Reason, "It says hello, not goodbye.") {
		t.Fatalf("run %s: %s (%s)", fail.ID, fail.Status, fail.Reason)
	}
	if c := fail.Steps[1].Critique; c == nil || c.Verdict != event.VerdictFail || fail.Steps[1].Status != "failed" {
		t.Fatalf("review step %+v, verdict %+v", fail.Steps[1], c)
	}

	asked := calls.Load()
	if asked != 2 {
		t.Fatalf("the model was asked %d times, want 2", asked)
	}
	for _, run := range []string{pass.ID, fail.ID} {
		rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: run})
		if err != nil {
			t.Fatal(err)
		}
		// accepted, greet assigned, the critique requested, finished.
		if rep.Diverged() || rep.Checked < 4 || rep.Reproduced != rep.Checked {
			t.Fatalf("replay of %s: %+v", run, rep)
		}
	}
	if calls.Load() != asked {
		t.Fatalf("replay asked the model")
	}
}
