package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/agentic-dev/agentic/bus/event/eventtest"
)

// notInPlanFiles are the fields of event.Step a plan file does not write
// as a step's key, and why.
var notInPlanFiles = map[string]string{
	"subgoal":  "set by the subgoal a step is listed under",
	"worktree": "set by the planner on every step of a plan with a git block (git.go)",
	"git":      "the plan's git block, which the planner copies onto the git steps it adds (git.go)",
}

// TestStepFieldsAreTheProtocols: the keys a plan file's step may have
// (stepFields, and a case of stepField for each) are event.Step's JSON
// fields: a field added to event.Step and not here, or here and not
// there, fails.
func TestStepFieldsAreTheProtocols(t *testing.T) {
	var want []string
	for _, f := range eventtest.StepFields() {
		if _, skip := notInPlanFiles[f]; !skip {
			want = append(want, f)
		}
	}
	for _, f := range want {
		if !slices.Contains(stepFields, f) {
			t.Errorf("event.Step has field %q, which a plan file cannot set: add it to stepFields and a case of stepField in roles/planner/plan/decode.go (or to notInPlanFiles here, saying why)", f)
		}
	}
	for _, f := range stepFields {
		if !slices.Contains(want, f) {
			t.Errorf("stepFields has %q, which event.Step has no JSON field for: add the field to %s, or drop the key", f, eventtest.StepDecl)
		}
	}
	cases := stepFieldCases(t)
	for _, f := range stepFields {
		if !slices.Contains(cases, f) {
			t.Errorf("stepFields has %q, which stepField (roles/planner/plan/decode.go) has no case for: a plan file's value would be dropped", f)
		}
	}
	for _, c := range cases {
		if !slices.Contains(stepFields, c) {
			t.Errorf("stepField has a case %q that stepFields lacks: the decoder refuses the key before it gets there", c)
		}
	}
}

// stepFieldCases lists the string cases of stepField's switch in
// decode.go.
func stepFieldCases(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "decode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "stepField" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, s)
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatal("no cases found in stepField (roles/planner/plan/decode.go): the check is broken")
	}
	return out
}
