package plan_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// TestCheckedPlanPublishes proves that the plan check and signing apply
// one secret rule: a plan Parse accepts is signed both as the goal.submitted
// that carries the file and as the plan.proposed that carries the plan,
// and an env value or command signing would refuse is refused by Parse,
// located at its field.
func TestCheckedPlanPublishes(t *testing.T) {
	values := []string{
		"hunter2", "$DB_PASSWORD", "${TOKEN}", "500", "postgres://u:pw@db/x", "postgres://db/x",
		"sk-abcdefghijklmnopqrstuvwxyz", "Bearer abcdefghijklmnopqrstuvwxyz", "password=abc", "plain words",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "AKIAABCDEFGHIJKLMNOP", "x: y", "-----BEGIN RSA PRIVATE KEY-----",
	}
	names := []string{"DB_PASSWORD", "API_KEY", "URL", "X", "GITHUB_TOKEN"}
	var accepted, refused int
	for _, v := range values {
		for _, k := range names {
			src := fmt.Sprintf("steps:\n  - id: a\n    run: echo\n    env:\n      %s: %q\n", k, v)
			p, err := plan.Parse("p.yaml", []byte(src))
			proposedErr, submittedErr := error(nil), checkDraft(t, event.GoalSubmitted, event.GoalSubmittedData{Goal: "g", PlanFile: src})
			if p != nil {
				proposedErr = checkDraft(t, event.PlanProposed, event.PlanProposedData{Revision: 1, Source: "file", Plan: *p})
			}
			switch {
			case err == nil && (proposedErr != nil || submittedErr != nil):
				t.Errorf("env %s=%q passes the plan check but signing refuses it: %v / %v", k, v, submittedErr, proposedErr)
			case err != nil && submittedErr == nil:
				t.Errorf("env %s=%q is refused by the plan check but signing takes it: %v", k, v, err)
			case err != nil:
				refused++
				var pe *plan.Error
				if !errors.As(err, &pe) || len(pe.Problems) != 1 || pe.Problems[0].Path != "steps[0].env."+k || pe.Problems[0].Line != 5 {
					t.Errorf("env %s=%q: want one problem at steps[0].env.%s line 5, got %v", k, v, k, err)
				}
			default:
				accepted++
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("accepted %d, refused %d: the cases must cover both", accepted, refused)
	}
	for _, run := range []string{"curl -H 'Authorization: Bearer abcdefghijklmnop' x", "mysql --password hunter2", "echo $PASSWORD", "make"} {
		src := fmt.Sprintf("steps:\n  - id: a\n    run: %q\n", run)
		p, err := plan.Parse("p.yaml", []byte(src))
		if err != nil {
			continue
		}
		if err := checkDraft(t, event.PlanProposed, event.PlanProposedData{Revision: 1, Source: "file", Plan: *p}); err != nil {
			t.Errorf("run %q passes the plan check but signing refuses it: %v", run, err)
		}
	}
}

func checkDraft(t *testing.T, typ event.Type, v any) error {
	t.Helper()
	d, err := event.NewDraft(typ, event.NewID(), v)
	if err != nil {
		t.Fatal(err)
	}
	return envelope.CheckDraft(d)
}

// TestDurationLimits: the limits themselves are accepted, and the backoff
// limit is the orchestrator's cap on retry delays.
func TestDurationLimits(t *testing.T) {
	if plan.MaxBackoff != orchestrator.MaxBackoff {
		t.Fatalf("plan.MaxBackoff %s != orchestrator.MaxBackoff %s: a plan could ask for a delay the orchestrator cuts", plan.MaxBackoff, orchestrator.MaxBackoff)
	}
	src := "steps:\n  - id: a\n    run: x\n    timeout: 24h\n    retries: 1\n    backoff: 5m\n"
	p, err := plan.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps[0].Timeout.Std() != plan.MaxTimeout || p.Steps[0].Backoff.Std() != plan.MaxBackoff {
		t.Fatalf("got timeout %s backoff %s", p.Steps[0].Timeout, p.Steps[0].Backoff)
	}
}
