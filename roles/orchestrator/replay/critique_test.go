package replay_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// TestReplayOfACritiqueReadsTheVerdict: a run whose critique step failed
// once with no verdict and then passed replays without divergence — the
// critique requests included — and without asking the model.
func TestReplayOfACritiqueReadsTheVerdict(t *testing.T) {
	var calls atomic.Int64
	srv := llmtest.Server(t, func(string) string {
		if calls.Add(1) <= 2 { // twice no verdict: the first attempt ends with verdict error
			return "not a verdict, twice over"
		}
		return `{"verdict": "pass", "judgement": "It printed ok."}`
	})
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	run := n.Submit(t, "critique.yaml", `goal: critique
steps:
  - id: work
    run: echo ok
  - id: review
    kind: critique
    target: work
    criteria: it prints ok
    retries: 1
    backoff: 10ms
`)
	r := n.WaitRun(t, run, 30*time.Second)
	if r.Status != event.RunSucceeded || r.Steps[1].Attempt != 2 {
		t.Fatalf("run %s: %s (%s), review %+v", r.ID, r.Status, r.Reason, r.Steps[1])
	}
	waitEnd(t, n, run)
	asked := calls.Load()
	rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	// accepted, work assigned, two critique requests, finished.
	if rep.Diverged() || rep.Checked < 5 || rep.Reproduced != rep.Checked || rep.Finished != event.RunSucceeded {
		b, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("replay: %s", b)
	}
	if calls.Load() != asked {
		t.Fatal("replay asked the model")
	}
}
