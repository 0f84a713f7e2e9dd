package llm

import (
	"context"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// lastPrompt is the last message of request i of cs.
func lastPrompt(cs *chatServer, i int) (system, last string) {
	msgs, _ := cs.request(i)["messages"].([]any)
	first, _ := msgs[0].(map[string]any)
	end, _ := msgs[len(msgs)-1].(map[string]any)
	system, _ = first["content"].(string)
	last, _ = end["content"].(string)
	return system, last
}

// TestReactFirstPlanIsOpen: in react mode the first plan is the model's
// first step, open, and the response schema allows "done".
func TestReactFirstPlanIsOpen(t *testing.T) {
	cs := newChatServer(t, answer{text: `{"rationale": "look first", "steps": [{"id": "look", "run": "ls /srv/www"}], "done": false}`, usage: [2]int{100, 20}})
	p, info, err := source(cs, Config{Mode: ModeReact}).PlanInfo(context.Background(), "run-1", goal)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Open || len(p.Steps) != 1 || p.Steps[0].ID != "look" || p.Steps[0].OnFailure != event.OnFailureReplan || info.Planner != ReactVersion {
		t.Fatalf("plan %+v, info %+v", p, info)
	}
	system, last := lastPrompt(cs, 0)
	if !strings.Contains(system, "You plan a step at a time") || !strings.Contains(last, "No step has run yet") {
		t.Fatalf("prompt:\n%s\n---\n%s", system, last)
	}
	rf, _ := cs.request(0)["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if _, ok := props["done"]; !ok {
		t.Fatalf("response schema without done: %v", schema)
	}
}

// nextRequest is the leader's request after step look of an open plan
// succeeded.
func nextRequest() event.PlanReplanRequestedData {
	look := event.Step{ID: "look", Kind: event.KindShell, Run: "ls /srv/www", OnFailure: event.OnFailureReplan}
	return event.PlanReplanRequestedData{
		Revision: 1, Goal: goal, Source: "llm", Reason: event.ReplanNext, Tokens: 120,
		Plan:    event.Plan{Steps: []event.Step{look}, Open: true},
		Done:    []string{"look"},
		Results: []event.StepResult{{Step: "look", Status: event.StepSucceeded, OutputTail: "index.html\n"}},
	}
}

// TestReactNextKeepsTheStepsSoFar: the next revision is the steps so far,
// exactly, then the model's new steps (a repeated earlier step is taken
// for the kept one; new steps may depend on earlier ones); the prompt
// carries the observations; done closes the plan; an answer that adds
// nothing without done is sent back.
func TestReactNextKeepsTheStepsSoFar(t *testing.T) {
	cs := newChatServer(t,
		answer{text: `{"steps": []}`, usage: [2]int{100, 10}},
		answer{text: `{"rationale": "serve it", "steps": [{"id": "look", "run": "changed"}, {"id": "serve", "run": "python3 -m http.server 8080", "depends_on": ["look"]}], "done": true}`, usage: [2]int{100, 30}})
	req := nextRequest()
	p, rationale, info, err := source(cs, Config{Mode: ModeReact}).Replan(context.Background(), "run-1", req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Open || len(p.Steps) != 2 || p.Steps[0].Run != "ls /srv/www" || p.Steps[1].ID != "serve" || p.Steps[1].DependsOn[0] != "look" || rationale != "serve it" {
		t.Fatalf("plan %+v, rationale %q", p, rationale)
	}
	if len(info.Responses) != 2 || info.PromptTokens != 200 {
		t.Fatalf("info %+v", info)
	}
	_, first := lastPrompt(cs, 0)
	for _, want := range []string{"The steps so far (plan revision 1)", "- look: ls /srv/www", "succeeded, exit code 0", "index.html", `"done": true`} {
		if !strings.Contains(first, want) {
			t.Errorf("prompt lacks %q:\n%s", want, first)
		}
	}
	_, second := lastPrompt(cs, 1)
	if !strings.Contains(second, `adds no step and does not say "done": true`) {
		t.Fatalf("the problem was not sent back:\n%s", second)
	}
}

// TestReactFailureKeepsTheStepsDone: a failure replan in react mode keeps
// the steps done, drops the failed one and what did not run, and stays
// open.
func TestReactFailureKeepsTheStepsDone(t *testing.T) {
	cs := newChatServer(t, answer{text: `{"steps": [{"id": "start", "run": "nginx", "depends_on": ["install"]}]}`, usage: [2]int{100, 30}})
	p, _, _, err := source(cs, Config{Mode: ModeReact}).Replan(context.Background(), "run-1", replanRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Open || len(p.Steps) != 2 || p.Steps[0].ID != "install" || p.Steps[1].Run != "nginx" {
		t.Fatalf("plan %+v", p)
	}
	_, last := lastPrompt(cs, 0)
	if !strings.Contains(last, "Step start failed (attempt 2, exit code 5)") || !strings.Contains(last, "Unit nginx.service not found") {
		t.Fatalf("prompt:\n%s", last)
	}
}
