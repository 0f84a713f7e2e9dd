package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/policy"
)

// instant is a Model that answers at once with a fixed text: what is left
// of planning when the model's latency is taken out.
type instant struct{ text string }

func (m instant) Name() string { return "instant" }
func (m instant) Complete(context.Context, Request) (Response, error) {
	return Response{Text: m.text, Model: "instant", PromptTokens: 1000, CompletionTokens: 5000}, nil
}

// bigPlan is a 200-step plan in 10 subgoals, each step depending on the
// one before it in its subgoal, as a model would answer it.
func bigPlan() string {
	type step struct {
		ID        string   `json:"id"`
		Run       string   `json:"run"`
		DependsOn []string `json:"depends_on,omitempty"`
		Timeout   string   `json:"timeout"`
	}
	type subgoal struct {
		ID        string   `json:"id"`
		Title     string   `json:"title"`
		DependsOn []string `json:"depends_on,omitempty"`
		Steps     []step   `json:"steps"`
	}
	var sgs []subgoal
	for g := range 10 {
		sg := subgoal{ID: fmt.Sprintf("g%d", g), Title: fmt.Sprintf("Part %d of the work", g)}
		if g > 0 {
			sg.DependsOn = []string{fmt.Sprintf("g%d", g-1)}
		}
		for s := range 20 {
			st := step{ID: fmt.Sprintf("g%d-s%d", g, s), Run: fmt.Sprintf("apt-get install -y pkg-%d-%d && systemctl restart svc-%d", g, s, s), Timeout: "5m"}
			if s > 0 {
				st.DependsOn = []string{fmt.Sprintf("g%d-s%d", g, s-1)}
			}
			sg.Steps = append(sg.Steps, st)
		}
		sgs = append(sgs, sg)
	}
	b, _ := json.Marshal(map[string]any{"goal": "install and restart everything", "subgoals": sgs})
	return "Here is the plan:\n```json\n" + string(b) + "\n```"
}

// BenchmarkPlanOverhead is planning's own cost for a 200-step plan, the
// model's latency excluded: the prompt (with the default policy's summary,
// capabilities and notes), extracting the JSON from a fenced answer, the
// schema check and plan.Parse. Target: ≤ 20 ms (one candidate).
func BenchmarkPlanOverhead(b *testing.B) {
	b.Run("candidates=1", func(b *testing.B) { benchPlan(b, 1) })
	// Three candidates: three times the checks, plus scoring each plan
	// (the policy's judgement of every step, the shapes of its commands).
	b.Run("candidates=3", func(b *testing.B) { benchPlan(b, 3) })
}

func benchPlan(b *testing.B, candidates int) {
	answer := bigPlan()
	in := Inputs{Policy: policy.Default(), Capabilities: []string{"docker", "gpu"},
		Notes:    []string{"`apt-get install` without -y failed 4 of 5 times; with -y it succeeded 5 of 5"},
		Commands: []memory.CommandStat{{Shape: "apt-get install", Successes: 1, Failures: 4}, {Shape: "apt-get install -y", Successes: 5}}}
	src := NewSource(instant{answer}, Config{Candidates: candidates, Inputs: func(context.Context, event.GoalSubmittedData) Inputs { return in }})
	goal := event.GoalSubmittedData{Goal: "install", Text: "install and restart everything"}
	b.ReportAllocs()
	for b.Loop() {
		p, _, err := src.PlanInfo(context.Background(), "run-1", goal)
		if err != nil || len(p.Steps) != 200 {
			b.Fatalf("plan: %v", err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/plan")
}
