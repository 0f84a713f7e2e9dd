package plan

import (
	"slices"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

func TestCritiqueParses(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`goal: serve
steps:
  - id: serve
    run: curl -si http://localhost:8080/
  - id: other
    run: echo other
  - id: review
    kind: critique
    target: serve
    criteria: the page answers 200
    depends_on: [other]
    retries: 1
    on_failure: replan
`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Step("review")
	if r == nil || r.Kind != event.KindCritique || r.Target != "serve" || r.Criteria != "the page answers 200" || r.OnFailure != event.OnFailureReplan {
		t.Fatalf("review = %+v", r)
	}
	// The dependency on the target is added.
	if !slices.Contains(r.DependsOn, "serve") || !slices.Contains(r.DependsOn, "other") {
		t.Fatalf("depends_on = %v, want serve and other", r.DependsOn)
	}
	// Normal form is a fixed point.
	again := *p
	again.Steps = slices.Clone(p.Steps)
	if err := Normalize(&again); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Step("review").DependsOn, r.DependsOn) {
		t.Fatalf("normalize again: %v, want %v", again.Step("review").DependsOn, r.DependsOn)
	}
}

func TestCritiqueErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		wants []want
	}{
		{"no target", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    criteria: ok\n",
			[]want{{line: 4, path: "steps[1].target", msg: "critique step needs target"}}},
		{"blank target", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: ' '\n    criteria: ok\n",
			[]want{{line: 6, col: 13, path: "steps[1].target", msg: "critique step needs target"}}},
		{"no criteria", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: a\n",
			[]want{{path: "steps[1].criteria", msg: "critique step needs criteria"}}},
		{"unknown target", "steps:\n  - id: build\n    run: x\n  - id: c\n    kind: critique\n    target: biuld\n    criteria: ok\n",
			[]want{{line: 6, col: 13, path: "steps[1].target", msg: `target: unknown step "biuld" (did you mean "build"?)`}}},
		{"target is a subgoal", "subgoals:\n  - id: s\n    steps: [{id: a, run: x}]\nsteps:\n  - id: c\n    kind: critique\n    target: s\n    criteria: ok\n",
			[]want{{path: "steps[0].target", msg: "not a subgoal"}}},
		{"targets itself", "steps:\n  - id: c\n    kind: critique\n    target: c\n    criteria: ok\n",
			[]want{{path: "steps[0].target", msg: "targets itself"}}},
		{"targets a critique", "steps:\n  - id: a\n    run: x\n  - {id: c, kind: critique, target: a, criteria: ok}\n  - {id: d, kind: critique, target: c, criteria: ok}\n",
			[]want{{path: "steps[2].target", msg: `target "c" is a critique step`}}},
		{"run on a critique", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: a\n    criteria: ok\n    run: echo\n",
			[]want{{line: 8, path: "steps[1].run", msg: "critique step has run; a critique runs nothing"}}},
		{"path on a critique", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: a\n    criteria: ok\n    path: f\n",
			[]want{{path: "steps[1].path", msg: "critique step has path"}}},
		{"patch on a critique", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: a\n    criteria: ok\n    patch: x\n",
			[]want{{path: "steps[1].patch", msg: "critique step has patch"}}},
		{"env on a critique", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: a\n    criteria: ok\n    env: {A: b}\n",
			[]want{{path: "steps[1].env", msg: "critique step has env"}}},
		{"target on a shell step", "steps:\n  - id: a\n    run: x\n  - id: b\n    run: y\n    target: a\n    criteria: ok\n",
			[]want{{path: "steps[1].target", msg: "shell step has target; target belongs to critique steps"},
				{path: "steps[1].criteria", msg: "shell step has criteria"}}},
		{"cycle through the target", "steps:\n  - id: a\n    run: x\n    depends_on: [c]\n  - id: c\n    kind: critique\n    target: a\n    criteria: ok\n",
			[]want{{msg: "cycle"}}},
		{"target not a string", "steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: [a]\n    criteria: ok\n",
			[]want{{path: "steps[1].target", msg: "must be a string"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.input))
			requireProblems(t, err, tt.wants...)
		})
	}
}

func TestCritiqueInCode(t *testing.T) {
	p := &event.Plan{Steps: []event.Step{
		{ID: "a", Run: "x"},
		{ID: "c", Kind: event.KindCritique, Target: "a", Criteria: "ok"},
	}}
	if err := Normalize(p); err != nil {
		t.Fatal(err)
	}
	if c := p.Step("c"); !slices.Equal(c.DependsOn, []string{"a"}) || c.OnFailure != event.OnFailureAbort {
		t.Fatalf("c = %+v", c)
	}
	bad := &event.Plan{Steps: []event.Step{{ID: "a", Run: "x"}, {ID: "c", Kind: event.KindCritique, Target: "zz", Criteria: "ok"}}}
	err := Validate(bad)
	requireProblems(t, err, want{path: "steps[1].target", msg: `unknown step "zz"`})
}
