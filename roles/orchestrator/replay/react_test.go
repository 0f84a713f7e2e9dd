package replay_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// TestReplayReactRun: a run planned a step at a time (three open
// revisions asked for by the leader, the last closing the plan) replays
// without divergence: the next requests and their acceptances are
// decisions like any other.
func TestReplayReactRun(t *testing.T) {
	srv := llmtest.Server(t, func(prompt string) string {
		switch {
		case !strings.Contains(prompt, "The steps so far"):
			return `{"steps": [{"id": "one", "run": "echo alpha"}]}`
		case strings.Contains(prompt, "- two:"):
			return `{"steps": [{"id": "three", "run": "echo gamma", "depends_on": ["two"]}], "done": true}`
		}
		return `{"steps": [{"id": "two", "run": "echo beta", "depends_on": ["one"]}]}`
	})
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model, cfg.Planner.Mode = srv.URL+"/v1", "test-model", config.PlannerModeReact
	n := nodetest.Start(t, cfg)
	run := event.NewID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	goal := event.GoalSubmittedData{Goal: "three words", Text: "three words"}
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.GoalSubmitted, run, goal)); err != nil {
		t.Fatal(err)
	}
	if r := n.WaitRun(t, run, 60*time.Second); r.Status != event.RunSucceeded || len(r.Steps) != 3 {
		t.Fatalf("run %s: %s (%s), %d steps", r.ID, r.Status, r.Reason, len(r.Steps))
	}
	waitEnd(t, n, run)
	rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	// 3 acceptances, 2 next requests, 3 assignments, run.finished.
	if rep.Diverged() || rep.Checked < 9 || rep.Reproduced != rep.Checked || rep.Finished != event.RunSucceeded {
		b, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("%s", b)
	}
}
