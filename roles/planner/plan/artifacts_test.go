package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

func TestOutputsAndInputs(t *testing.T) {
	p, err := plan.Parse("ship.yaml", []byte(`goal: ship
steps:
  - id: make
    run: make dist
    outputs: [report.md, "dist/*.tar.gz"]
  - id: ship
    run: ./ship dist/app.tar.gz
    inputs:
      - {step: make, name: dist/app.tar.gz}
      - {family: nightly, name: report.md, as: last.md}
      - {run: 0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d, name: out.bin}
`))
	if err != nil {
		t.Fatal(err)
	}
	mk, ship := p.Steps[0], p.Steps[1]
	if !slices.Equal(mk.Outputs, []string{"report.md", "dist/*.tar.gz"}) {
		t.Errorf("outputs = %q", mk.Outputs)
	}
	want := []event.ArtifactInput{
		{Step: "make", Name: "dist/app.tar.gz"},
		{Family: "nightly", Name: "report.md", As: "last.md"},
		{Run: "0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d", Name: "out.bin"},
	}
	if !slices.Equal(ship.Inputs, want) {
		t.Errorf("inputs = %+v, want %+v", ship.Inputs, want)
	}
	if !slices.Equal(ship.DependsOn, []string{"make"}) {
		t.Errorf("an input of step make did not make ship depend on it: depends_on = %q", ship.DependsOn)
	}
	// A plan given whole (a model's) gets the same dependency.
	whole := event.Plan{Goal: "g", Steps: []event.Step{
		{ID: "a", Kind: event.KindShell, Run: "true", Outputs: []string{"o"}},
		{ID: "b", Kind: event.KindShell, Run: "true", Inputs: []event.ArtifactInput{{Step: "a", Name: "o"}}},
	}}
	if err := plan.Normalize(&whole); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole.Steps[1].DependsOn, []string{"a"}) {
		t.Errorf("normalized depends_on = %q", whole.Steps[1].DependsOn)
	}
}

func TestBadArtifactsAreLocated(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"steps:\n  - id: a\n    run: x\n    outputs: [../secret]\n", `leaves the step's working directory`},
		{"steps:\n  - id: a\n    run: x\n    outputs: [/etc/passwd]\n", `is absolute`},
		{"steps:\n  - id: a\n    run: x\n    outputs: [a/../../b]\n", `not clean`},
		{"steps:\n  - id: a\n    run: x\n    inputs:\n      - {name: x}\n", "name exactly one of step, run and family"},
		{"steps:\n  - id: a\n    run: x\n    inputs:\n      - {step: b, run: r, name: x}\n", "name exactly one of step, run and family"},
		{"steps:\n  - id: a\n    run: x\n    inputs:\n      - {step: nope, name: x}\n", "nope"},
		{"steps:\n  - id: a\n    run: x\n    inputs:\n      - {family: f, name: '*.md'}\n", "is a pattern"},
		{"steps:\n  - id: a\n    run: x\n    inputs:\n      - {family: f, name: x, colour: red}\n", "colour"},
		{"steps:\n  - id: a\n    outputs: [x]\n", "a noop step stores no outputs"},
		{"steps:\n  - id: a\n    run: x\n  - id: c\n    kind: critique\n    target: a\n    criteria: good\n    inputs:\n      - {step: a, name: x}\n", "a critique step reads no inputs"},
	} {
		_, err := plan.Parse("p.yaml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v; want an error with %q", c.in, err, c.want)
		}
	}
}
