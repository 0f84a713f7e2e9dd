package node_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// modelServer answers every request with answer; prompts, if given,
// receives each request's messages.
func modelServer(t *testing.T, answer string, prompts ...chan string) *httptest.Server {
	t.Helper()
	return llmtest.Server(t, func(prompt string) string {
		if len(prompts) > 0 {
			prompts[0] <- prompt
		}
		return answer
	})
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

// TestPromptNotesFollowRecordedFailures: the adaptive notes in a model's
// prompt come from the command statistics, and change once a command has
// failed often enough.
func TestPromptNotesFollowRecordedFailures(t *testing.T) {
	prompts := make(chan string, 4)
	srv := modelServer(t, `{"steps": [{"id": "hello", "run": "echo hello"}]}`, prompts)
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)

	n.WaitRun(t, submitText(t, n, "first"), 30*time.Second)
	if p := <-prompts; strings.Contains(p, "Notes from earlier runs") || !strings.Contains(p, "first") {
		t.Fatalf("first prompt:\n%s", p)
	}
	for i := range 3 {
		r := n.WaitRun(t, n.Submit(t, "fails.yaml", "steps:\n  - id: list\n    run: ls --no-such-flag /nonexistent\n"), 30*time.Second)
		if r.Status != event.RunFailed {
			t.Fatalf("run %d: %s", i, r.Status)
		}
	}
	n.WaitRun(t, submitText(t, n, "second"), 30*time.Second)
	if p := <-prompts; !strings.Contains(p, "Notes from earlier runs") || !strings.Contains(p, "`ls --no-such-flag` failed 3 of 3 times") {
		t.Fatalf("second prompt:\n%s", p)
	}
}
