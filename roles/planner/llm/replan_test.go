package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
)

// replanRequest is a request after step start of validPlan failed.
func replanRequest() event.PlanReplanRequestedData {
	return event.PlanReplanRequestedData{
		Revision: 1, Replans: 1, Goal: goal, Source: "llm",
		Plan: event.Plan{Goal: "serve", Steps: []event.Step{
			{ID: "install", Kind: event.KindShell, Run: "apt-get install -y nginx", OnFailure: event.OnFailureReplan},
			{ID: "start", Kind: event.KindShell, Run: "systemctl start nginx", DependsOn: []string{"install"}, OnFailure: event.OnFailureReplan},
		}},
		Done: []string{"install"},
		Failure: event.StepFailure{Step: "start", Attempt: 2, Command: "systemctl start nginx", ExitCode: 5, Class: event.ClassLogic,
			Error: "exit code 5", Output: "Failed to start nginx.service: Unit nginx.service not found.\n"},
	}
}

// TestReplanCarriesTheFailure: the replan prompt carries the plan in
// force, the steps done and the failure; the answer's rationale is taken
// out of the plan, and steps without on_failure get replan.
func TestReplanCarriesTheFailure(t *testing.T) {
	revised := `{"rationale": "nginx is not a unit here: start it directly", "goal": "serve", "steps": [
  {"id": "install", "run": "apt-get install -y nginx"},
  {"id": "start", "run": "nginx", "depends_on": ["install"], "on_failure": "abort"}]}`
	cs := newChatServer(t, answer{text: "```json\n" + revised + "\n```", usage: [2]int{400, 80}})
	p, rationale, info, err := source(cs, Config{}).Replan(context.Background(), "run-1", replanRequest())
	if err != nil {
		t.Fatal(err)
	}
	if rationale != "nginx is not a unit here: start it directly" {
		t.Errorf("rationale = %q", rationale)
	}
	if len(p.Steps) != 2 || p.Steps[1].Run != "nginx" || p.Steps[0].OnFailure != event.OnFailureReplan || p.Steps[1].OnFailure != event.OnFailureAbort {
		t.Fatalf("plan = %+v", p.Steps)
	}
	if info == nil || info.PromptTokens != 400 || len(info.Responses) != 1 {
		t.Fatalf("info = %+v", info)
	}
	msgs, _ := cs.request(0)["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	prompt, _ := last["content"].(string)
	for _, want := range []string{
		"Revision 1 of the plan ran", `"run": "systemctl start nginx"`,
		"Steps done (they will not run again if the revised plan keeps them unchanged): install",
		"Failed step: start (attempt 2)", "Command: systemctl start nginx", "Exit code: 5",
		"Unit nginx.service not found", `"rationale"`,
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("replan prompt lacks %q:\n%s", want, prompt)
		}
	}
	first, _ := msgs[0].(map[string]any)
	if s, _ := first["content"].(string); !strings.Contains(s, "on_failure: replan (default") {
		t.Errorf("system prompt does not tell the default on_failure:\n%s", s)
	}
}

// TestReplanInvalidTwice: a revision that is no plan twice fails with the
// problems, as a first plan does.
func TestReplanInvalidTwice(t *testing.T) {
	cs := newChatServer(t, answer{text: `{"rationale": 7, "steps": [{"id": "a", "run": "true"}]}`})
	_, _, info, err := source(cs, Config{}).Replan(context.Background(), "run-1", replanRequest())
	if !errors.Is(err, ErrInvalidPlan) || cs.count() != 2 || info == nil || len(info.Responses) != 2 {
		t.Fatalf("err = %v, %d requests, info %+v", err, cs.count(), info)
	}
}

// TestFirstPlanDefaultsToReplan: a first plan's steps that say nothing
// replan on a logic failure; one that says continue keeps it; a
// rationale in a first plan is allowed and dropped.
func TestFirstPlanDefaultsToReplan(t *testing.T) {
	cs := newChatServer(t, answer{text: `{"rationale": "simple", "subgoals": [{"id": "s", "steps": [
  {"id": "a", "run": "true"}, {"id": "b", "run": "true", "depends_on": ["a"], "on_failure": "continue"}]}]}`})
	p, _, err := source(cs, Config{}).PlanInfo(context.Background(), "run-1", goal)
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps[0].OnFailure != event.OnFailureReplan || p.Steps[1].OnFailure != event.OnFailureContinue {
		t.Fatalf("plan = %+v", p.Steps)
	}
}

// TestReplanCountsEarlierTokens: the tokens earlier revisions used count
// against the token budget: a spent budget asks the model nothing, and a
// replan that goes over it fails.
func TestReplanCountsEarlierTokens(t *testing.T) {
	cs := newChatServer(t, answer{text: validPlan, usage: [2]int{400, 80}})
	req := replanRequest()
	req.Tokens = 1000
	_, _, _, err := source(cs, Config{TokenBudget: 1000}).Replan(context.Background(), "run-1", req)
	if !errors.Is(err, ErrBudget) || cs.count() != 0 || !strings.Contains(err.Error(), "1000 tokens of a budget of 1000 before this revision") {
		t.Fatalf("err = %v, %d requests", err, cs.count())
	}
	req.Tokens = 600
	_, _, info, err := source(cs, Config{TokenBudget: 1000}).Replan(context.Background(), "run-1", req)
	if !errors.Is(err, ErrBudget) || cs.count() != 1 || info == nil || !strings.Contains(err.Error(), "1080 tokens, over the budget of 1000") {
		t.Fatalf("err = %v, %d requests", err, cs.count())
	}
	req.Tokens = 100
	if _, _, _, err := source(cs, Config{TokenBudget: 1000}).Replan(context.Background(), "run-1", req); err != nil {
		t.Fatal(err)
	}
}

// TestOutputEndCutsAtACharacter: a long output is quoted from its end,
// never from the middle of a character, and marked as cut.
func TestOutputEndCutsAtACharacter(t *testing.T) {
	short := "all good\n"
	if got := outputEnd(short); got != short {
		t.Fatalf("short output changed: %q", got)
	}
	long := strings.Repeat("é", maxOutputTail) // 2 bytes each
	got := outputEnd(long)
	if !strings.HasPrefix(got, "...") || !utf8.ValidString(got) || len(got) > maxOutputTail+3 {
		t.Fatalf("outputEnd of %d bytes: %d bytes, valid=%v, prefix %q", len(long), len(got), utf8.ValidString(got), got[:5])
	}
	if !strings.HasSuffix(long, got[3:]) {
		t.Fatal("outputEnd is not the end of the output")
	}
}
