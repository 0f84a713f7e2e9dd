package plan

import (
	"reflect"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestBranchErrors: every ambiguous or wrong use of next, tests and
// hypotheses is refused with a located problem.
func TestBranchErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		wants []want
	}{
		{"unknown on", "steps:\n  - id: a\n    run: x\n    next: [{on: done, to: b}]\n  - id: b\n    run: y\n",
			[]want{{line: 4, col: 17, path: "steps[0].next[0].on", msg: `unknown on "done"; allowed: success, failure`}}},
		{"no on, no to", "steps:\n  - id: a\n    run: x\n    next: [{}]\n",
			[]want{{path: "steps[0].next[0]", msg: "branch has no on"}, {path: "steps[0].next[0]", msg: "branch has no to"}}},
		{"unknown target", "steps:\n  - id: a\n    run: x\n    next: [{on: failure, to: diagnse}]\n  - id: diagnose\n    run: y\n",
			[]want{{line: 4, col: 30, path: "steps[0].next[0].to", msg: `unknown step "diagnse" (did you mean "diagnose"?)`}}},
		{"itself", "steps:\n  - id: a\n    run: x\n    next: [{on: failure, to: a}]\n",
			[]want{{path: "steps[0].next[0].to", msg: `step "a" branches to itself`}}},
		{"subgoal target", "subgoals:\n  - id: g\n    steps: [{id: b, run: y}]\nsteps:\n  - id: a\n    run: x\n    next: [{on: failure, to: g}]\n",
			[]want{{path: "steps[0].next[0].to", msg: `branch target "g" is a subgoal`}}},
		{"two branches on one outcome", "steps:\n  - id: a\n    run: x\n    next: [{on: failure, to: b}, {on: failure, to: c}]\n  - {id: b, run: y}\n  - {id: c, run: z}\n",
			[]want{{path: "steps[0].next[1].on", msg: `a second branch on failure (the first goes to "b")`}}},
		{"both outcomes to one target", "steps:\n  - id: a\n    run: x\n    next: [{on: success, to: b}, {on: failure, to: b}]\n  - {id: b, run: y}\n",
			[]want{{path: "steps[0].next[1].to", msg: `both branches lead to "b": it runs either way`}}},
		{"target of two steps", "steps:\n  - {id: a, run: x, next: [{on: failure, to: c}]}\n  - {id: b, run: y, next: [{on: success, to: c}]}\n  - {id: c, run: z}\n",
			[]want{{path: "steps[1].next[0].to", msg: `step "c" is already the target of a branch of "a"`}}},
		{"branch back to a dependency", "steps:\n  - {id: a, run: x}\n  - {id: b, run: y, depends_on: [a], next: [{on: failure, to: a}]}\n",
			[]want{{path: "steps[1].next[0].to", msg: `step "b" depends on "a", so it cannot branch to it`}}},
		{"branch back to an ancestor", "steps:\n  - {id: a, run: x}\n  - {id: b, run: y, depends_on: [a]}\n  - {id: c, run: y, depends_on: [b], next: [{on: failure, to: a}]}\n",
			[]want{{msg: "cycle: a -> c -> b -> a"}}},
		{"replan and a failure branch", "steps:\n  - {id: a, run: x, on_failure: replan, next: [{on: failure, to: b}]}\n  - {id: b, run: y}\n",
			[]want{{path: "steps[0].on_failure", msg: "on_failure: replan and a failure branch both route a failure"}}},
		{"next not a list", "steps:\n  - {id: a, run: x, next: b}\n",
			[]want{{path: "steps[0].next", msg: "must be a list (e.g. - {on: failure, to: diagnose})"}}},
		{"unknown branch field", "steps:\n  - {id: a, run: x, next: [{on: failure, goto: b}]}\n  - {id: b, run: y}\n",
			[]want{{path: "steps[0].next[0].goto", msg: `unknown field "goto"`}}},
		{"tests without hypotheses", "steps:\n  - {id: a, run: x, tests: [h1]}\n",
			[]want{{path: "steps[0].tests[0]", msg: `unknown hypothesis "h1": the plan lists none`}}},
		{"unknown hypothesis", "hypotheses: [{id: cache, statement: s}]\nsteps:\n  - {id: a, run: x, tests: [cahce]}\n",
			[]want{{line: 3, col: 29, path: "steps[0].tests[0]", msg: `unknown hypothesis "cahce" (did you mean "cache"?)`}}},
		{"tested twice", "hypotheses: [{id: h, statement: s}]\nsteps:\n  - {id: a, run: x, tests: [h, {hypothesis: h}]}\n",
			[]want{{path: "steps[0].tests[1].hypothesis", msg: `hypothesis "h" is tested twice`}}},
		{"bad evidence", "hypotheses: [{id: h, statement: s}]\nsteps:\n  - {id: a, run: x, tests: [{hypothesis: h, success: proves}]}\n",
			[]want{{path: "steps[0].tests[0].success", msg: `unknown evidence "proves"; allowed: supports, refutes, none`}}},
		{"no evidence either way", "hypotheses: [{id: h, statement: s}]\nsteps:\n  - {id: a, run: x, tests: [{hypothesis: h, success: none, failure: none}]}\n",
			[]want{{path: "steps[0].tests[0]", msg: "gives no evidence either way"}}},
		{"tests a mapping", "hypotheses: [{id: h, statement: s}]\nsteps:\n  - {id: a, run: x, tests: {h: yes}}\n",
			[]want{{path: "steps[0].tests", msg: "tests must be a list of hypothesis ids"}}},
		{"hypothesis ids", "hypotheses:\n  - {id: h, statement: s}\n  - {id: h, statement: t}\n  - {id: 'a b', statement: u}\n  - {statement: v}\n  - {id: x}\n  - {id: y, statement: '  '}\nsteps: [{id: a, run: x}]\n",
			[]want{
				{line: 3, path: "hypotheses[1].id", msg: `duplicate hypothesis id "h" (first declared at line 2:10)`},
				{path: "hypotheses[2].id", msg: `hypothesis id "a b" has a space`},
				{path: "hypotheses[3].id", msg: "hypothesis has no id"},
				{path: "hypotheses[4].statement", msg: `hypothesis "x" has no statement`},
				{path: "hypotheses[5].statement", msg: `hypothesis "y" has no statement`},
			}},
		{"unknown hypothesis field", "hypotheses: [{id: h, claim: s}]\nsteps: [{id: a, run: x}]\n",
			[]want{{path: "hypotheses[0].claim", msg: `unknown field "claim"`}}},
		{"secret in a statement", "hypotheses: [{id: h, statement: 'password=hunter2hunter2'}]\nsteps: [{id: a, run: x}]\n",
			[]want{{path: "hypotheses[0].statement", msg: "looks like a secret"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("plan.yaml", []byte(tc.input))
			if p != nil {
				t.Errorf("got a plan: %+v", p)
			}
			requireProblems(t, err, tc.wants...)
		})
	}
}

// TestBranchNormalize: a branch target depends on its branching step and
// comes after it whatever the declaration order; default evidence is left
// out; Normalize of the result changes nothing, and a code-built plan gets
// the same checks (paths without lines).
func TestBranchNormalize(t *testing.T) {
	p := &event.Plan{
		Hypotheses: []event.Hypothesis{{ID: "h", Statement: "s"}},
		Steps: []event.Step{
			{ID: "fix", Run: "y", Tests: []event.HypothesisTest{{Hypothesis: "h", Success: event.EvidenceSupports, Failure: event.EvidenceRefutes}}},
			{ID: "probe", Run: "x", Next: []event.Branch{{On: event.BranchOnFailure, To: "fix"}}, Tests: []event.HypothesisTest{}},
		},
	}
	if err := Normalize(p); err != nil {
		t.Fatal(err)
	}
	if p.Steps[0].ID != "probe" || p.Steps[1].ID != "fix" || !reflect.DeepEqual(p.Steps[1].DependsOn, []string{"probe"}) {
		t.Fatalf("order/deps: %+v", p.Steps)
	}
	if p.Steps[0].Tests != nil || !reflect.DeepEqual(p.Steps[1].Tests, []event.HypothesisTest{{Hypothesis: "h"}}) {
		t.Fatalf("tests: %+v / %+v", p.Steps[0].Tests, p.Steps[1].Tests)
	}
	again := clonePlan(p)
	if err := Normalize(&again); err != nil || !reflect.DeepEqual(*p, again) {
		t.Fatalf("Normalize not idempotent: %v\n%+v\n%+v", err, *p, again)
	}
	bad := &event.Plan{Steps: []event.Step{{ID: "a", Run: "x", Next: []event.Branch{{On: "maybe", To: "zz"}}, Tests: []event.HypothesisTest{{Hypothesis: "h"}}}}}
	requireProblems(t, Validate(bad),
		want{path: "steps[0].next[0].on", msg: `unknown on "maybe"`},
		want{path: "steps[0].next[0].to", msg: `unknown step "zz"`},
		want{path: "steps[0].tests[0].hypothesis", msg: `unknown hypothesis "h"`})
}
