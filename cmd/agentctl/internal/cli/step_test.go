package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/api"
)

// heldRun is a running run whose step deploy is held for a decision.
func heldRun() api.Run {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return api.Run{ID: runC, Goal: "deploy", Status: "running", Revision: 1, CreatedAt: t0, Steps: []api.Step{
		{ID: "build", Kind: "shell", Status: "succeeded", Attempt: 1, Node: "node-a", ExitCode: ptr(0)},
		{ID: "deploy", Kind: "shell", Status: "needs-decision", Attempt: 1, Node: "node-b", Reassigned: 1, Code: "node_lost",
			Error: "node node-b failed: not idempotent and may have started: held for an operator (agentctl step retry|skip)"},
		{ID: "announce", Kind: "shell", Status: "pending", DependsOn: []string{"deploy"}},
	}}
}

func TestStepRetryAndSkip(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = []api.Run{heldRun()} })

	r := h.run("step", "retry", "0190bb", "deploy", "--reason", "checked: it never began")
	if r.code != 0 || !strings.Contains(r.stdout, "retry requested for step deploy of run "+runC) {
		t.Fatalf("step retry = %+v", r)
	}
	evs := h.events()
	if len(evs) != 1 || evs[0].Type != "step.decided" || evs[0].Signer.ID != "alice" {
		t.Fatalf("published %+v", evs)
	}
	ev := evs[0].Events[0]
	if ev.Run != runC || string(ev.Data) != `{"step":"deploy","action":"retry","reason":"checked: it never began"}` {
		t.Errorf("decision event = %+v data %s", ev, ev.Data)
	}

	r = h.run("step", "skip", runC, "deploy", "-o", "json")
	got := decodeJSON[decidedResult](t, r.stdout)
	if r.code != 0 || got.Run != runC || got.Step != "deploy" || got.Action != "skip" || got.Event == "" {
		t.Fatalf("step skip -o json = %+v (%+v)", r, got)
	}
	if evs := h.events(); len(evs) != 2 || !strings.Contains(string(evs[1].Events[0].Data), `"action":"skip"`) {
		t.Fatalf("published %+v", evs)
	}
}

// TestStepDecisionRefused: a step that is not held, or not in the run, is
// refused with a clear error and nothing is published; a wrong command
// line is a usage error.
func TestStepDecisionRefused(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = []api.Run{heldRun()} })
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"step", "retry", runC, "build"}, ExitError, "step build of run " + runC + " is succeeded, not held for a decision (needs-decision): nothing to retry"},
		{[]string{"step", "skip", runC, "nowhere"}, ExitError, `run ` + runC + ` has no step "nowhere"`},
		{[]string{"step", "retry", "ffff", "deploy"}, ExitError, `no run matches "ffff"`},
		{[]string{"step", "retry", runC}, ExitUsage, "accepts 2 arg(s)"},
		{[]string{"step", "redo", runC, "deploy"}, ExitUsage, "unknown command"},
	}
	for _, tt := range tests {
		r := h.run(tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v = %+v, want exit %d and %q", tt.args, r, tt.code, tt.want)
		}
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events published by refused decisions", n)
	}
}

// TestRunShowHeldAndWaiting: run show names a step held for a decision,
// the attempts given up, and why a step waits.
func TestRunShowHeldAndWaiting(t *testing.T) {
	h := newHarness(t).withNode()
	run := heldRun()
	run.Reason = "step train: no live executor offers gpu"
	run.Steps = append(run.Steps, api.Step{ID: "train", Kind: "shell", Status: "ready", Wait: "no live executor offers gpu"})
	h.node.with(func(f *fakeNode) { f.runs = []api.Run{run} })
	r := h.run("run", "show", runC)
	for _, want := range []string{
		"reason    step train: no live executor offers gpu",
		"deploy (attempt 1): node node-b failed: not idempotent and may have started",
		"deploy: 1 attempt given up for another (its node failed or left)",
		"train waits: no live executor offers gpu",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run show lacks %q:\n%s", want, r.stdout)
		}
	}
	if !containsRow(r.stdout, "deploy", "needs-decision", "1", "node-b", "-", "-", "-") {
		t.Errorf("deploy row wrong:\n%s", r.stdout)
	}
}
