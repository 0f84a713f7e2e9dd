package llm

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestPlanWithBranchesAndHypotheses: a model's plan may use next, tests
// (short and long form) and hypotheses; the schema and plan.Parse accept
// them, and a step with a failure branch keeps its default on_failure
// (the branch routes its failure) where others get replan.
func TestPlanWithBranchesAndHypotheses(t *testing.T) {
	cs := newChatServer(t, answer{text: `{"rationale": "debug", "hypotheses": [{"id": "cache", "statement": "the cache is stale"}],
 "steps": [
  {"id": "repro", "run": "make test", "next": [{"on": "failure", "to": "clean"}, {"on": "success", "to": "done"}]},
  {"id": "clean", "run": "make clean test", "tests": ["cache"]},
  {"id": "other", "run": "true", "depends_on": ["clean"], "tests": [{"hypothesis": "cache", "success": "none", "failure": "supports"}]},
  {"id": "done", "kind": "noop"}]}`})
	p, _, err := source(cs, Config{}).PlanInfo(context.Background(), "run-1", goal)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Hypotheses, []event.Hypothesis{{ID: "cache", Statement: "the cache is stale"}}) {
		t.Errorf("hypotheses %+v", p.Hypotheses)
	}
	byID := map[string]event.Step{}
	for _, s := range p.Steps {
		byID[s.ID] = s
	}
	if r := byID["repro"]; len(r.Next) != 2 || r.OnFailure != event.OnFailureAbort {
		t.Errorf("repro %+v: want its branches and on_failure abort", r)
	}
	if c := byID["clean"]; c.OnFailure != event.OnFailureReplan || !reflect.DeepEqual(c.DependsOn, []string{"repro"}) ||
		!reflect.DeepEqual(c.Tests, []event.HypothesisTest{{Hypothesis: "cache"}}) {
		t.Errorf("clean %+v", c)
	}
	if o := byID["other"]; !reflect.DeepEqual(o.Tests, []event.HypothesisTest{{Hypothesis: "cache", Success: event.EvidenceNone, Failure: event.EvidenceSupports}}) {
		t.Errorf("other %+v", o)
	}
}

// TestSchemaRefusesBadBranches: the schema refuses an unknown outcome, a
// branch without a target and an unknown evidence value.
func TestSchemaRefusesBadBranches(t *testing.T) {
	for _, doc := range []string{
		`{"steps": [{"id": "a", "next": [{"on": "maybe", "to": "b"}]}]}`,
		`{"steps": [{"id": "a", "next": [{"on": "failure"}]}]}`,
		`{"hypotheses": [{"id": "h", "statement": "s"}], "steps": [{"id": "a", "tests": [{"hypothesis": "h", "success": "proves"}]}]}`,
		`{"hypotheses": [{"id": "h"}], "steps": [{"id": "a"}]}`,
	} {
		if err := CheckSchema([]byte(doc)); err == nil || !strings.Contains(err.Error(), "/") {
			t.Errorf("CheckSchema(%s) = %v, want a located problem", doc, err)
		}
	}
	if err := CheckSchema([]byte(`{"hypotheses": [{"id": "h", "statement": "s"}], "steps": [{"id": "a", "tests": ["h", {"hypothesis": "h"}], "next": [{"on": "success", "to": "b"}]}]}`)); err != nil {
		t.Errorf("valid document refused: %v", err)
	}
}
