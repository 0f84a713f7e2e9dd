package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestPromptCarriesFamilyTemplate: the template of the goal's family is
// the model's starting example, fenced as data; without one the prompt
// names none.
func TestPromptCarriesFamilyTemplate(t *testing.T) {
	tpl := "family: web\nsteps:\n  - id: check\n    run: nginx -t\n"
	for _, with := range []bool{true, false} {
		cs := newChatServer(t, answer{text: validPlan})
		cfg := Config{Inputs: func(context.Context, event.GoalSubmittedData) Inputs {
			if !with {
				return Inputs{}
			}
			return Inputs{Template: tpl}
		}}
		if _, _, err := source(cs, cfg).PlanInfo(context.Background(), "run-1", goal); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(cs.request(0)["messages"])
		has := strings.Contains(string(b), "template of this goal's plan family") && strings.Contains(string(b), "nginx -t")
		if has != with {
			t.Errorf("template given %v, in the prompt %v:\n%s", with, has, b)
		}
	}
}
