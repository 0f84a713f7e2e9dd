package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// reactNode starts a node whose planner plans a step at a time with a
// model that answers with answer(prompt).
func reactNode(t *testing.T, tokenBudget int, answer func(prompt string) string) *nodetest.Node {
	t.Helper()
	srv := llmtest.Server(t, answer)
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	cfg.Planner.Mode, cfg.Planner.TokenBudget = config.PlannerModeReact, tokenBudget
	return nodetest.Start(t, cfg)
}

// runEvents returns the events of run's audit of type typ, decoded.
func runEvents[T any](t *testing.T, n *nodetest.Node, run string, typ event.Type) []T {
	t.Helper()
	page, err := n.API.Audit(context.Background(), api.AuditRequest{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, l := range page.Items {
		if l.Type != string(typ) {
			continue
		}
		var v T
		if err := json.Unmarshal(l.Data, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestReactRunScriptedEndToEnd: in react mode a free-text goal runs a
// step at a time: each next step is planned from the output of the steps
// before it, and the model's "done" ends the run.
func TestReactRunScriptedEndToEnd(t *testing.T) {
	n := reactNode(t, 0, func(prompt string) string {
		switch {
		case !strings.Contains(prompt, "The steps so far"):
			return `{"steps": [{"id": "one", "run": "echo alpha"}]}`
		case strings.Contains(prompt, "beta") && strings.Contains(prompt, "- two:"):
			return `{"rationale": "seen both", "steps": [{"id": "three", "run": "echo gamma", "depends_on": ["two"]}], "done": true}`
		case strings.Contains(prompt, "alpha"):
			return `{"steps": [{"id": "two", "run": "echo beta", "depends_on": ["one"]}], "done": false}`
		}
		return "lost"
	})
	r := n.WaitRun(t, submitText(t, n, "find the three words"), 60*time.Second)
	if r.Status != event.RunSucceeded || len(r.Steps) != 3 {
		t.Fatalf("run %s: %s (%s), %d steps", r.ID, r.Status, r.Reason, len(r.Steps))
	}
	reqs := runEvents[event.PlanReplanRequestedData](t, n, r.ID, event.PlanReplanRequested)
	if len(reqs) != 2 || reqs[0].Reason != event.ReplanNext || reqs[1].Replans != 0 || len(reqs[1].Results) != 2 ||
		!strings.Contains(reqs[1].Results[1].OutputTail, "beta") {
		t.Fatalf("requests %+v", reqs)
	}
	props := runEvents[event.PlanProposedData](t, n, r.ID, event.PlanProposed)
	if len(props) != 3 || !props[0].Plan.Open || !props[1].Plan.Open || props[2].Plan.Open || props[2].Failure != nil ||
		props[2].Rationale != "seen both" || props[2].Planner == nil || !strings.HasSuffix(props[2].Planner.Planner, "/react") {
		t.Fatalf("proposals %+v", props)
	}
}

// TestReactModelThatNeverSaysDone: a model that always adds a step is
// stopped by the planner's token budget: the run fails with the reason.
func TestReactModelThatNeverSaysDone(t *testing.T) {
	perCall := llmtest.PromptTokens + llmtest.CompletionTokens
	n := reactNode(t, 3*perCall+perCall/2, func(prompt string) string {
		i := strings.Count(prompt, "\n- s")
		return fmt.Sprintf(`{"steps": [{"id": "s%d", "run": "echo %d"}]}`, i, i)
	})
	r := n.WaitRun(t, submitText(t, n, "count for ever"), 60*time.Second)
	if r.Status != event.RunFailed || !strings.Contains(r.Reason, "token") || len(r.Steps) != 3 {
		t.Fatalf("run %s: %s (%s), %d steps", r.ID, r.Status, r.Reason, len(r.Steps))
	}
}

// TestCandidatesScoredByRecordedHistory: with planner.candidates 2, the
// node asks for two plans and proposes the one whose command has not
// failed before, by the command statistics of the cluster's memory; both
// candidates and the scoring are recorded in the proposal.
func TestCandidatesScoredByRecordedHistory(t *testing.T) {
	var calls atomic.Int32
	srv := llmtest.Server(t, func(string) string {
		if calls.Add(1)%2 == 1 {
			return `{"steps": [{"id": "list", "run": "ls --no-such-flag /nonexistent"}]}`
		}
		return `{"steps": [{"id": "list", "run": "ls /"}]}`
	})
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model, cfg.Planner.Candidates = srv.URL+"/v1", "test-model", 2
	n := nodetest.Start(t, cfg)
	for i := range 3 {
		r := n.WaitRun(t, n.Submit(t, "fails.yaml", "steps:\n  - id: list\n    run: ls --no-such-flag /nonexistent\n"), 30*time.Second)
		if r.Status != event.RunFailed {
			t.Fatalf("run %d: %s", i, r.Status)
		}
	}
	r := n.WaitRun(t, submitText(t, n, "list the root"), 30*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	props := runEvents[event.PlanProposedData](t, n, r.ID, event.PlanProposed)
	if len(props) != 1 || props[0].Plan.Steps[0].Run != "ls /" {
		t.Fatalf("proposals %+v", props)
	}
	p := props[0].Planner
	if p == nil || len(p.Candidates) != 2 || p.Candidates[0].History != 1 || p.Candidates[0].Chosen || !p.Candidates[1].Chosen ||
		p.Scoring == "" || p.PromptTokens != 2*llmtest.PromptTokens {
		t.Fatalf("planner info %+v", p)
	}
}
