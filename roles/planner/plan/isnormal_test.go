package plan

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
)

// TestIsNormal: a parsed file is in normal form; a plan as written (no
// defaults, steps out of order) or invalid is not; nil is not; and the
// plan is not changed by the check.
func TestIsNormal(t *testing.T) {
	parsed := mustParse(t, "p.yaml", "goal: ship\nsteps:\n  - id: b\n    run: make b\n    depends_on: [a]\n  - id: a\n    run: make a\n")
	if !IsNormal(parsed) {
		t.Errorf("a parsed plan is not normal: %+v", parsed)
	}
	parsed.Open = true // not Normalize's to keep: a source's word
	if !IsNormal(parsed) {
		t.Error("an open parsed plan is not normal")
	}
	asWritten := &event.Plan{Goal: "ship", Steps: []event.Step{{ID: "b", Run: "make b", DependsOn: []string{"a"}}, {ID: "a", Run: "make a"}}}
	if IsNormal(asWritten) {
		t.Error("a plan without defaults, out of order, is normal")
	}
	if len(asWritten.Steps[0].Kind) != 0 || asWritten.Steps[0].ID != "b" {
		t.Errorf("IsNormal changed the plan: %+v", asWritten)
	}
	invalid := &event.Plan{Goal: "ship", Steps: []event.Step{{ID: "a", Kind: event.KindShell, Run: "x", DependsOn: []string{"nope"}, OnFailure: event.OnFailureAbort}}}
	if IsNormal(invalid) || IsNormal(nil) {
		t.Error("an invalid or nil plan is normal")
	}
}

// TestIsNormalIgnoresEnvironment: a value that is a secret of this
// process's environment makes Normalize refuse the plan (signing would
// refuse the proposal), but IsNormal judges the plan alone, so every node
// decides the same; a value that matches a secret pattern is refused by
// both.
func TestIsNormalIgnoresEnvironment(t *testing.T) {
	const value = "q8Zt3vLm0pRw7nXk"
	redact.RememberEnv([]string{"HOPS_TEST_API_TOKEN=" + value})
	p := mustParse(t, "p.yaml", "goal: ship\nsteps:\n  - id: a\n    run: make\n")
	p.Steps[0].Run = "make " + value
	again := clonePlan(p)
	if err := Normalize(&again); err == nil {
		t.Fatal("Normalize took a plan holding a secret of the environment; the test shows nothing")
	}
	if !IsNormal(p) {
		t.Error("IsNormal refused a plan for a value of this process's environment")
	}
	p.Steps[0].Run = "curl -H 'Authorization: Bearer ghp_" + "0123456789abcdefghijklmnopqrstuvwxyzAB'"
	if IsNormal(p) {
		t.Error("IsNormal took a plan holding a token by its pattern")
	}
}
