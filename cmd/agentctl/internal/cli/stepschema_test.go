package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/event/eventtest"
	"gopkg.in/yaml.v3"
)

// TestPlanYAMLWritesEveryStepField: agentctl plan show --yaml (planYAML)
// writes every field of event.Step, nested ones included, under the key a
// plan file reads it from; the step's subgoal is the subgoal it is listed
// under. A field added to event.Step and not to fileStep and planYAML
// fails here.
func TestPlanYAMLWritesEveryStepField(t *testing.T) {
	s := eventtest.FullStep()
	p := event.Plan{Goal: "g", Subgoals: []event.Subgoal{{ID: s.Subgoal}}, Steps: []event.Step{s}}
	b, err := planYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Subgoals []struct {
			ID    string           `yaml:"id"`
			Steps []map[string]any `yaml:"steps"`
		} `yaml:"subgoals"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Subgoals) != 1 || file.Subgoals[0].ID != s.Subgoal || len(file.Subgoals[0].Steps) != 1 {
		t.Fatalf("the step is not listed under its subgoal:\n%s", b)
	}
	j, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(j, &want); err != nil {
		t.Fatal(err)
	}
	delete(want, "subgoal")
	// A git run's marks are written as the plan's git block, from which
	// the planner makes them again (plangit.go).
	delete(want, "worktree")
	delete(want, "git")
	sameKeys(t, "step", want, file.Subgoals[0].Steps[0])
}

// sameKeys reports the keys of the JSON form (want) missing from the
// YAML form (got), and the other way round, at every depth.
func sameKeys(t *testing.T, at string, want, got map[string]any) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			t.Errorf("agentctl's plan writer leaves %s.%s out: add it to fileStep and planYAML in cmd/agentctl/internal/cli/plan.go (declared in %s)", at, k, eventtest.StepDecl)
			continue
		}
		w := want[k]
		if wl, ok := w.([]any); ok && len(wl) > 0 {
			gl, ok := g.([]any)
			if !ok || len(gl) == 0 {
				t.Errorf("%s.%s: written as %v, want a list", at, k, g)
				continue
			}
			w, g = wl[0], gl[0]
			k += "[0]"
		}
		if wm, ok := w.(map[string]any); ok {
			if gm, ok := g.(map[string]any); ok {
				sameKeys(t, fmt.Sprintf("%s.%s", at, k), wm, gm)
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("agentctl's plan writer writes %s.%s, which event.Step has no JSON field for: add it to %s or drop it from fileStep", at, k, eventtest.StepDecl)
		}
	}
}
