package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// modelServer speaks the chat-completions API and answers every request
// with answer.
func modelServer(t *testing.T, answer string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1763800000, "model": "served:1",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 300, "completion_tokens": 60, "total_tokens": 360},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// submitText publishes a free-text goal and returns the run id.
func submitText(t *testing.T, n *nodetest.Node, text string) string {
	t.Helper()
	run := event.NewID()
	d := event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: text, Text: text})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestFreeTextGoalPlannedByModel: with planner.model set, a free-text goal
// is planned by the model, runs, and the proposal records its provenance.
func TestFreeTextGoalPlannedByModel(t *testing.T) {
	srv := modelServer(t, "Here you go:\n```json\n"+`{"steps": [{"id": "hello", "run": "echo hello"}, {"id": "bye", "run": "echo bye", "depends_on": ["hello"]}]}`+"\n```")
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	r := n.WaitRun(t, submitText(t, n, "say hello then bye"), 30*time.Second)
	if r.Status != event.RunSucceeded || len(r.Steps) != 2 {
		t.Fatalf("run %s: %s (%s), %d steps", r.ID, r.Status, r.Reason, len(r.Steps))
	}
	page, err := n.API.Audit(context.Background(), api.AuditRequest{Run: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range page.Items {
		if l.Type != string(event.PlanProposed) {
			continue
		}
		var p event.PlanProposedData
		if err := json.Unmarshal(l.Data, &p); err != nil {
			t.Fatal(err)
		}
		if p.Source != "llm" || p.Planner == nil || p.Planner.Model != "test-model" || p.Planner.ServedModel != "served:1" ||
			p.Planner.PromptTokens != 300 || len(p.Planner.Responses) != 1 || !strings.Contains(p.Planner.Responses[0], "echo bye") {
			t.Fatalf("plan.proposed = %+v, planner %+v", p, p.Planner)
		}
		return
	}
	t.Fatal("no plan.proposed in the run's audit")
}

// TestModelThatNeverPlansFailsTheRunClearly: two invalid answers fail the
// run with the problem, and the rejection records what the model said.
func TestModelThatNeverPlansFailsTheRunClearly(t *testing.T) {
	srv := modelServer(t, "I would rather not.")
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	r := n.WaitRun(t, submitText(t, n, "do something"), 30*time.Second)
	if r.Status != event.RunFailed || !strings.Contains(r.Reason, "no JSON object") || !strings.Contains(r.Reason, "test-model") {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
}
