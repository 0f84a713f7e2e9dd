package plan

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

func TestValidateCodeBuiltPlan(t *testing.T) {
	tests := []struct {
		name  string
		plan  *event.Plan
		wants []want
	}{
		{"nil", nil, []want{{msg: "plan is nil"}}},
		{"no steps", &event.Plan{Goal: "g"}, []want{{msg: "plan has no steps"}}},
		{"cycle", &event.Plan{Steps: []event.Step{
			{ID: "a", Run: "x", DependsOn: []string{"b"}},
			{ID: "b", Run: "x", DependsOn: []string{"a"}},
		}}, []want{{path: "steps[0].depends_on[0]", msg: "cycle: a -> b -> a"}}},
		{"unknown dependency", &event.Plan{Steps: []event.Step{{ID: "build", Run: "x"}, {ID: "t", Run: "x", DependsOn: []string{"biuld"}}}},
			[]want{{path: "steps[1].depends_on[0]", msg: `unknown step "biuld" (did you mean "build"?)`}}},
		{"duplicate", &event.Plan{Steps: []event.Step{{ID: "a", Run: "x"}, {ID: "a", Run: "y"}}},
			[]want{{path: "steps[1].id", msg: `duplicate step id "a" (first declared at steps[0].id)`}}},
		{"fields", &event.Plan{Steps: []event.Step{{ID: "a b", Kind: "bash", Retries: -1, Timeout: event.Duration(-time.Second), Backoff: event.Duration(-time.Second), OnFailure: "x", Env: map[string]string{"A-B": "1"}}}},
			[]want{
				{path: "steps[0].id", msg: `step id "a b" has a space`},
				{path: "steps[0].kind", msg: "unknown kind"},
				{path: "steps[0].retries", msg: "negative"},
				{path: "steps[0].timeout", msg: "negative"},
				{path: "steps[0].backoff", msg: "negative"},
				{path: "steps[0].on_failure", msg: "unknown on_failure"},
				{path: "steps[0].env.A-B", msg: "not a valid variable name"},
			}},
		{"capabilities", &event.Plan{Steps: []event.Step{{ID: "a", Run: "x", Capabilities: append([]string{"docker", "no/slash"}, make([]string, MaxCapabilities)...)}}},
			[]want{
				{path: "steps[0].capabilities", msg: "34 capabilities; the limit is 32"},
				{path: "steps[0].capabilities[1]", msg: `capability "no/slash"`},
				{path: "steps[0].capabilities[2]", msg: "capability is empty"},
			}},
		{"shell without run", &event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindShell}}}, []want{{path: "steps[0].run", msg: "shell step needs run"}}},
		{"blank run", &event.Plan{Steps: []event.Step{{ID: "a", Run: " \t"}, {ID: "b", Kind: event.KindNoop, Run: "  "}}},
			[]want{{path: "steps[0].run", msg: "run is empty"}, {path: "steps[1].run", msg: "run is empty"}}},
		{"durations over limits", &event.Plan{Steps: []event.Step{{ID: "a", Run: "x", Retries: 1,
			Timeout: event.Duration(MaxTimeout + time.Second), Backoff: event.Duration(MaxBackoff + time.Second)}}},
			[]want{{path: "steps[0].timeout", msg: "the limit is 24h0m0s"}, {path: "steps[0].backoff", msg: "the limit is 5m0s"}}},
		{"secret in env", &event.Plan{Steps: []event.Step{{ID: "a", Run: "x", Env: map[string]string{"API_KEY": "abcdef123456"}}}},
			[]want{{path: "steps[0].env.API_KEY", msg: "looks like a secret"}}},
		{"unknown subgoal label", &event.Plan{Subgoals: []event.Subgoal{{ID: "setup"}}, Steps: []event.Step{{ID: "a", Run: "x", Subgoal: "setpu"}}},
			[]want{{path: "steps[0].subgoal", msg: `unknown subgoal "setpu" (did you mean "setup"?)`}, {path: "subgoals[0]", msg: `subgoal "setup" has no steps`}}},
		{"too many steps", func() *event.Plan {
			p := &event.Plan{}
			for i := range MaxSteps + 1 {
				p.Steps = append(p.Steps, event.Step{ID: "s" + strconv.Itoa(i)})
			}
			return p
		}(), []want{{msg: "plan has 10001 steps; the limit is 10000"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.plan)
			requireProblems(t, err, tt.wants...)
			// Normalize reports the same and leaves the plan alone.
			var before event.Plan
			if tt.plan != nil {
				before = clonePlan(tt.plan)
			}
			if nerr := Normalize(tt.plan); nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("Normalize: %v; Validate: %v", nerr, err)
			}
			if tt.plan != nil && !reflect.DeepEqual(before, *tt.plan) {
				t.Errorf("Normalize changed an invalid plan")
			}
		})
	}
}

// TestValidateLargePlan: a long chain declared backwards is sorted.
func TestValidateLargePlan(t *testing.T) {
	p := &event.Plan{}
	for i := range 2000 {
		s := event.Step{ID: "s" + strconv.Itoa(i), Run: "x"}
		if i > 0 {
			s.DependsOn = []string{"s" + strconv.Itoa(i-1)}
		}
		p.Steps = append(p.Steps, s)
	}
	slices.Reverse(p.Steps)
	if err := Normalize(p); err != nil {
		t.Fatal(err)
	}
	if p.Steps[0].ID != "s0" || p.Steps[1999].ID != "s1999" {
		t.Errorf("order: %s ... %s", p.Steps[0].ID, p.Steps[1999].ID)
	}
}

func TestNormalizeCodeBuiltPlan(t *testing.T) {
	p := &event.Plan{
		Goal:     "g",
		Subgoals: []event.Subgoal{{ID: "A"}, {ID: "B"}},
		Steps: []event.Step{
			{ID: "b1", Subgoal: "B", Run: "x", DependsOn: []string{"A", "A"}},
			{ID: "a1", Subgoal: "A", Run: "x", Retries: 1, Env: map[string]string{}},
			{ID: "a2", Subgoal: "A", DependsOn: []string{"a1"}},
		},
	}
	if err := Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := Normalize(p); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	want := &event.Plan{
		Goal:     "g",
		Subgoals: []event.Subgoal{{ID: "A"}, {ID: "B"}},
		Steps: []event.Step{
			{ID: "a1", Subgoal: "A", Kind: event.KindShell, Run: "x", Retries: 1, Backoff: event.Duration(DefaultBackoff), OnFailure: event.OnFailureAbort},
			{ID: "a2", Subgoal: "A", Kind: event.KindNoop, DependsOn: []string{"a1"}, OnFailure: event.OnFailureAbort},
			{ID: "b1", Subgoal: "B", Kind: event.KindShell, Run: "x", DependsOn: []string{"a2"}, OnFailure: event.OnFailureAbort},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("normalized:\n%+v\nwant:\n%+v", p, want)
	}
}

func clonePlan(p *event.Plan) event.Plan {
	c := *p
	c.Subgoals = slices.Clone(p.Subgoals)
	c.Steps = slices.Clone(p.Steps)
	for i := range c.Steps {
		c.Steps[i].DependsOn = slices.Clone(c.Steps[i].DependsOn)
	}
	return c
}
