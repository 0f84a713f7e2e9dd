package core

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/event/eventtest"
)

// TestStepViewSharesTheStepsFields: a field of the step view (StepView,
// view.go) named like a field of event.Step is that field, shown: the
// same JSON name has the step's type. The view's other fields are the
// orchestrator's (status, attempt, node, ...).
func TestStepViewSharesTheStepsFields(t *testing.T) {
	byName := func(typ reflect.Type) map[string]reflect.StructField {
		out := map[string]reflect.StructField{}
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out[name] = f
		}
		return out
	}
	step := byName(reflect.TypeFor[event.Step]())
	shared := 0
	for _, name := range eventtest.JSONFields(reflect.TypeFor[StepView]()) {
		sf, ok := step[name]
		if !ok {
			continue
		}
		shared++
		vf := byName(reflect.TypeFor[StepView]())[name]
		if vf.Type != sf.Type {
			t.Errorf("StepView.%s (roles/orchestrator/core/view.go) is a %s, but %q of %s is a %s: show the step's field as it is declared",
				vf.Name, vf.Type, name, eventtest.StepDecl, sf.Type)
		}
	}
	if shared < 5 {
		t.Fatalf("the step view shares %d fields with event.Step (id, title, subgoal, kind, depends_on at least): the check is broken", shared)
	}

	// And shows the step's values.
	var l ledger
	s := policied()
	spec := event.Step{ID: "s", Title: "the step", Subgoal: "sg", Kind: event.KindShell, Run: "true", DependsOn: []string{"a"}}
	s.Apply(l.add(event.GoalSubmitted, "r", "op", t0, event.GoalSubmittedData{Goal: "g"}))
	s.Apply(l.add(event.PlanProposed, "r", "p", t0, event.PlanProposedData{Revision: 1, Plan: event.Plan{
		Subgoals: []event.Subgoal{{ID: "sg"}},
		Steps:    []event.Step{{ID: "a", Kind: event.KindNoop}, spec}}}))
	r := s.Runs["r"]
	if r == nil || len(r.Steps) != 2 {
		t.Fatalf("run %+v", r)
	}
	v := reflect.ValueOf(r.StepView(1))
	sv := reflect.ValueOf(spec)
	for name, vf := range byName(reflect.TypeFor[StepView]()) {
		sf, ok := step[name]
		if !ok {
			continue
		}
		if got, want := v.FieldByIndex(vf.Index).Interface(), sv.FieldByIndex(sf.Index).Interface(); !reflect.DeepEqual(got, want) {
			t.Errorf("StepView.%s = %v, the step's %q is %v: copy it in Run.StepView (roles/orchestrator/core/runview.go)", vf.Name, got, name, want)
		}
	}
}
