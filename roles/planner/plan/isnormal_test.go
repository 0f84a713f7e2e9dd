package plan

import (
	"fmt"
	"strings"
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

// bigPlan is a parsed plan of n steps, each depending on the one before.
func bigPlan(t *testing.T, n int) *event.Plan {
	t.Helper()
	var b strings.Builder
	b.WriteString("goal: many\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: s%d\n    run: \"true\"\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "    depends_on: [s%d]\n", i-1)
		}
	}
	return mustParse(t, "p.yaml", b.String())
}

// TestIsNormalRemembers: every fold of a goal asks IsNormal of the same
// plan, each with its own decoded copy; the answer for a plan already
// judged is remembered by its content, so asking again does not compile
// it again: it only encodes it (about 2 allocations a step, where
// compiling makes over 50).
func TestIsNormalRemembers(t *testing.T) {
	p := bigPlan(t, 200)
	if !IsNormal(p) {
		t.Fatal("a parsed plan is not normal")
	}
	copied := clonePlan(p)
	allocs := testing.AllocsPerRun(5, func() {
		if !IsNormal(&copied) {
			t.Fatal("a copy of a normal plan is not normal")
		}
	})
	if allocs > 5*200 {
		t.Errorf("IsNormal of a 200-step plan judged before: %.0f allocations, want at most 1000 (compiled again?)", allocs)
	}
}

// TestIsNormalRemembersNoStaleAnswer: what IsNormal remembers never
// hides a change: the same plan value changed after it was judged, in a
// way that makes it not normal (or normal again), is judged anew.
func TestIsNormalRemembersNoStaleAnswer(t *testing.T) {
	p := bigPlan(t, 50)
	if !IsNormal(p) {
		t.Fatal("a parsed plan is not normal")
	}
	p.Steps[10].OnFailure = "" // a default left out
	if IsNormal(p) {
		t.Error("a plan changed after it was judged normal is still normal")
	}
	p.Steps[10].OnFailure = event.OnFailureAbort
	if !IsNormal(p) {
		t.Error("the plan changed back is not normal")
	}
	p.Steps[3].DependsOn = []string{"nope"}
	if IsNormal(p) {
		t.Error("a plan with a dangling dependency is normal")
	}
	p.Steps[3].DependsOn = []string{"s2"}
	p.Steps[5].Run = "curl -H 'Authorization: Bearer ghp_" + "0123456789abcdefghijklmnopqrstuvwxyzAB'"
	if IsNormal(p) {
		t.Error("a plan holding a token by its pattern is normal")
	}
}

// TestNormalMemoBounded: the memo keeps at most normalMemoSize answers,
// forgetting the oldest first.
func TestNormalMemoBounded(t *testing.T) {
	m := memo{answers: map[[32]byte]bool{}}
	for i := range 3 * normalMemoSize {
		m.put([32]byte{byte(i), byte(i >> 8)}, i%2 == 0)
	}
	if len(m.answers) != normalMemoSize || len(m.order) != normalMemoSize {
		t.Fatalf("memo holds %d answers (%d in order), want %d", len(m.answers), len(m.order), normalMemoSize)
	}
	last := 3*normalMemoSize - 1
	if ok, found := m.get([32]byte{byte(last), byte(last >> 8)}); !found || ok != (last%2 == 0) {
		t.Errorf("the newest answer: %v, %v", ok, found)
	}
	if _, found := m.get([32]byte{0, 0}); found {
		t.Error("the oldest answer is still remembered")
	}
}
