package llm

import (
	"context"
	"errors"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/policy"
)

// candidatePolicy gates rm -rf and denies mkfs.
func candidatePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte("default: allow\nrules:\n  - {pattern: \"rm -rf\", level: high, require_confirmation: true}\n  - {pattern: \"mkfs\", level: critical, action: deny}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCandidatesScoredAndRecorded: with 5 candidates the model is asked
// five times with seeds 7..11; an invalid candidate is recorded with its
// error, one with a denied step is not chosen, a gated step and commands
// that failed before cost their score, and the lowest score is proposed.
// Every answer's tokens are counted.
func TestCandidatesScoredAndRecorded(t *testing.T) {
	const (
		gated   = `{"steps": [{"id": "clean", "run": "rm -rf /tmp/www"}, {"id": "serve", "run": "nginx", "depends_on": ["clean"]}]}`
		denied  = `{"steps": [{"id": "serve", "run": "mkfs /dev/sdb"}]}`
		flaky   = `{"steps": [{"id": "serve", "run": "apt-get install -y nginx"}]}`
		good    = `{"rationale": "one step", "steps": [{"id": "serve", "run": "nginx"}]}`
		invalid = `no plan here`
	)
	cs := newChatServer(t,
		answer{text: gated, usage: [2]int{100, 10}},
		answer{text: invalid, usage: [2]int{100, 10}}, answer{text: invalid, usage: [2]int{100, 10}},
		answer{text: denied, usage: [2]int{100, 10}},
		answer{text: flaky, usage: [2]int{100, 10}},
		answer{text: good, usage: [2]int{100, 10}})
	seed := int64(7)
	cfg := Config{Candidates: 5, Seed: &seed, Inputs: func(context.Context, event.GoalSubmittedData) Inputs {
		return Inputs{Policy: candidatePolicy(t), Commands: []memory.CommandStat{{Shape: "apt-get install -y", Successes: 1, Failures: 3}}}
	}}
	p, info, err := source(cs, cfg).PlanInfo(context.Background(), "run-1", goal)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || p.Steps[0].Run != "nginx" {
		t.Fatalf("chose %+v", p.Steps)
	}
	if cs.count() != 6 || info.PromptTokens != 600 || info.CompletionTokens != 60 || len(info.Responses) != 6 || info.Scoring != Scoring {
		t.Fatalf("%d requests, info %+v", cs.count(), info)
	}
	for i, want := range []int64{7, 8, 8, 9, 10, 11} {
		if got, _ := cs.request(i)["seed"].(float64); int64(got) != want {
			t.Errorf("request %d seed %v, want %d", i, cs.request(i)["seed"], want)
		}
	}
	c := info.Candidates
	if len(c) != 5 {
		t.Fatalf("candidates %+v", c)
	}
	if c[0].Risk != 1 || c[0].Steps != 2 || c[0].Score != 12 || c[0].Response != 0 || c[0].Chosen ||
		c[1].Error == "" || c[1].Response != 2 || c[1].Chosen ||
		c[2].Denied != 1 || c[2].Chosen ||
		c[3].History != 0.75 || c[3].Score != 4.75 || c[3].Chosen ||
		c[4].Score != 1 || !c[4].Chosen || c[4].Response != 5 || *c[4].Seed != 11 {
		t.Fatalf("candidates %+v", c)
	}
}

// TestCandidatesTieAndAllInvalid: equal scores go to the first asked;
// when no candidate is a plan, planning fails as with one.
func TestCandidatesTieAndAllInvalid(t *testing.T) {
	cs := newChatServer(t,
		answer{text: `{"steps": [{"id": "a", "run": "echo a"}]}`, usage: [2]int{10, 1}},
		answer{text: `{"steps": [{"id": "b", "run": "echo b"}]}`, usage: [2]int{10, 1}})
	p, info, err := source(cs, Config{Candidates: 2}).PlanInfo(context.Background(), "run-1", goal)
	if err != nil || p.Steps[0].ID != "a" || !info.Candidates[0].Chosen || info.Candidates[1].Chosen {
		t.Fatalf("plan %+v, info %+v, err %v", p, info, err)
	}

	cs = newChatServer(t, answer{text: "no", usage: [2]int{10, 1}})
	_, info, err = source(cs, Config{Candidates: 3}).PlanInfo(context.Background(), "run-1", goal)
	if !errors.Is(err, ErrInvalidPlan) || info == nil || len(info.Candidates) != 3 || len(info.Responses) != 6 {
		t.Fatalf("info %+v, err %v", info, err)
	}
}

// TestCandidatesWithinTheTokenBudget: a candidate the budget cannot cover
// is not asked for; the ones asked are scored and one is proposed.
func TestCandidatesWithinTheTokenBudget(t *testing.T) {
	cs := newChatServer(t, answer{text: `{"steps": [{"id": "a", "run": "echo a"}]}`, usage: [2]int{100, 20}})
	p, info, err := source(cs, Config{Candidates: 4, TokenBudget: 240}).PlanInfo(context.Background(), "run-1", goal)
	if err != nil || p == nil || cs.count() != 2 || len(info.Candidates) != 2 || info.PromptTokens+info.CompletionTokens != 240 {
		t.Fatalf("%d requests, info %+v, err %v", cs.count(), info, err)
	}
}

// TestCandidatesAllDenied: when every candidate has a step the policy
// denies, the best of them is proposed all the same (Scoring says so),
// each recorded with its denied steps: the run then ends policy_denied
// at that step, with the policy's reason, rather than the planning
// failing without one.
func TestCandidatesAllDenied(t *testing.T) {
	cs := newChatServer(t,
		answer{text: `{"steps": [{"id": "wipe", "run": "mkfs /dev/sdb"}, {"id": "b", "run": "echo b", "depends_on": ["wipe"]}]}`, usage: [2]int{10, 1}},
		answer{text: `{"steps": [{"id": "wipe", "run": "mkfs /dev/sdc"}]}`, usage: [2]int{10, 1}})
	cfg := Config{Candidates: 2, Inputs: func(context.Context, event.GoalSubmittedData) Inputs {
		return Inputs{Policy: candidatePolicy(t)}
	}}
	p, info, err := source(cs, cfg).PlanInfo(context.Background(), "run-1", goal)
	if err != nil || p == nil || len(p.Steps) != 1 || p.Steps[0].Run != "mkfs /dev/sdc" {
		t.Fatalf("plan %+v, err %v", p, err)
	}
	c := info.Candidates
	if len(c) != 2 || c[0].Denied != 1 || c[1].Denied != 1 || c[0].Chosen || !c[1].Chosen {
		t.Fatalf("candidates %+v", c)
	}
}
