package plan

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestValidateCodeBuiltPlan(t *testing.T) {
	tests := []struct {
		name  string
		plan  *Plan
		wants []want
	}{
		{"nil", nil, []want{{msg: "plan is nil"}}},
		{"no steps", &Plan{Goal: "g"}, []want{{msg: "plan has no steps"}}},
		{"cycle", &Plan{Steps: []Step{
			{ID: "a", Run: "x", DependsOn: []string{"b"}},
			{ID: "b", Run: "x", DependsOn: []string{"a"}},
		}}, []want{{path: "steps[0].depends_on[0]", msg: "cycle: a -> b -> a"}}},
		{"unknown dependency", &Plan{Steps: []Step{{ID: "build", Run: "x"}, {ID: "t", Run: "x", DependsOn: []string{"biuld"}}}},
			[]want{{path: "steps[1].depends_on[0]", msg: `unknown step "biuld" (did you mean "build"?)`}}},
		{"duplicate", &Plan{Steps: []Step{{ID: "a", Run: "x"}, {ID: "a", Run: "y"}}},
			[]want{{path: "steps[1].id", msg: `duplicate step id "a" (first declared at steps[0].id)`}}},
		{"fields", &Plan{Steps: []Step{{ID: "a b", Kind: "bash", Retries: -1, Timeout: -time.Second, Backoff: -time.Second, OnFailure: "x", Env: map[string]string{"A-B": "1"}}}},
			[]want{
				{path: "steps[0].id", msg: "may only use"},
				{path: "steps[0].kind", msg: "unknown kind"},
				{path: "steps[0].retries", msg: "negative"},
				{path: "steps[0].timeout", msg: "negative"},
				{path: "steps[0].backoff", msg: "negative"},
				{path: "steps[0].on_failure", msg: "unknown on_failure"},
				{path: "steps[0].env.A-B", msg: "not a valid variable name"},
			}},
		{"shell without run", &Plan{Steps: []Step{{ID: "a", Kind: KindShell}}}, []want{{path: "steps[0].run", msg: "shell step needs run"}}},
		{"unknown subgoal label", &Plan{Subgoals: []Subgoal{{ID: "setup"}}, Steps: []Step{{ID: "a", Run: "x", Subgoal: "setpu"}}},
			[]want{{path: "steps[0].subgoal", msg: `unknown subgoal "setpu" (did you mean "setup"?)`}, {path: "subgoals[0]", msg: `subgoal "setup" has no steps`}}},
		{"too many steps", func() *Plan {
			p := &Plan{}
			for i := range MaxSteps + 1 {
				p.Steps = append(p.Steps, Step{ID: "s" + strconv.Itoa(i)})
			}
			return p
		}(), []want{{msg: "plan has 10001 steps; the limit is 10000"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Validate()
			requireProblems(t, err, tt.wants...)
			// Normalize reports the same and leaves the plan alone.
			var before Plan
			if tt.plan != nil {
				before = clonePlan(tt.plan)
			}
			if nerr := tt.plan.Normalize(); nerr == nil || nerr.Error() != err.Error() {
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
	p := &Plan{}
	for i := range 2000 {
		s := Step{ID: "s" + strconv.Itoa(i), Run: "x"}
		if i > 0 {
			s.DependsOn = []string{"s" + strconv.Itoa(i-1)}
		}
		p.Steps = append(p.Steps, s)
	}
	slices.Reverse(p.Steps)
	if err := p.Normalize(); err != nil {
		t.Fatal(err)
	}
	if p.Steps[0].ID != "s0" || p.Steps[1999].ID != "s1999" {
		t.Errorf("order: %s ... %s", p.Steps[0].ID, p.Steps[1999].ID)
	}
}

func TestNormalizeCodeBuiltPlan(t *testing.T) {
	p := &Plan{
		Goal:     "g",
		Subgoals: []Subgoal{{ID: "A"}, {ID: "B"}},
		Steps: []Step{
			{ID: "b1", Subgoal: "B", Run: "x", DependsOn: []string{"A", "A"}},
			{ID: "a1", Subgoal: "A", Run: "x", Retries: 1, Env: map[string]string{}},
			{ID: "a2", Subgoal: "A", DependsOn: []string{"a1"}},
		},
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := p.Normalize(); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	want := &Plan{
		Goal:     "g",
		Subgoals: []Subgoal{{ID: "A"}, {ID: "B"}},
		Steps: []Step{
			{ID: "a1", Subgoal: "A", Kind: KindShell, Run: "x", Retries: 1, Backoff: DefaultBackoff, OnFailure: OnFailureAbort},
			{ID: "a2", Subgoal: "A", Kind: KindNoop, DependsOn: []string{"a1"}, OnFailure: OnFailureAbort},
			{ID: "b1", Subgoal: "B", Kind: KindShell, Run: "x", DependsOn: []string{"a2"}, OnFailure: OnFailureAbort},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("normalized:\n%+v\nwant:\n%+v", p, want)
	}
}

func clonePlan(p *Plan) Plan {
	c := *p
	c.Subgoals = slices.Clone(p.Subgoals)
	c.Steps = slices.Clone(p.Steps)
	for i := range c.Steps {
		c.Steps[i].DependsOn = slices.Clone(c.Steps[i].DependsOn)
	}
	return c
}
