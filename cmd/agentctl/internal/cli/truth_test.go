package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// TestRunShowReplannedStep: a step that failed and was replanned is not
// said to have been given up for another because of a node: its earlier
// attempts belong to the earlier revision. A step whose attempt a lost
// node took is still said so, with the code's words.
func TestRunShowReplannedStep(t *testing.T) {
	h := newHarness(t).withNode()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h.node.with(func(f *fakeNode) {
		f.runs = []api.Run{{ID: runC, Goal: "fix", Status: "running", Revision: 2, CreatedAt: t0, Steps: []api.Step{
			{ID: "test", Kind: "shell", Status: "pending", Attempt: 2, Reassigned: 2},
			{ID: "deploy", Kind: "shell", Status: "pending", Attempt: 1, Reassigned: 1, Code: "not_started"},
		}}}
	})
	r := h.run("run", "show", runC)
	if r.code != 0 {
		t.Fatalf("run show = %+v", r)
	}
	for _, want := range []string{
		"test: 2 attempts under an earlier plan revision (they do not count against its retries)",
		"deploy: 1 attempt given up for another (its executor did not start it in time)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run show lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "test: 2 attempts given up") {
		t.Errorf("a replanned step is said to be given up for another:\n%s", r.stdout)
	}
}

// TestGateApproveRememberRefused: --remember on a command no allow rule
// can name exactly (a run-time variable, a glob, more than one command)
// is refused before anything is published, saying why; on a plain
// command it is published.
func TestGateApproveRememberRefused(t *testing.T) {
	h := newSecureHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.streamAudit = true })
	vary := gatedDeploy()
	vary.Step, vary.Spec = "wipe", &event.Step{ID: "wipe", Kind: event.KindShell, Run: "rm -rf $TARGET"}
	vary.Subject = event.GateSubject(*vary.Spec, vary.Policy)
	plain := gatedDeploy()
	plain.Step, plain.Spec = "clean", &event.Step{ID: "clean", Kind: event.KindShell, Run: "rm -rf ./tmp"}
	plain.Subject = event.GateSubject(*plain.Spec, plain.Policy)
	h.withGates(vary, plain, gatedPatch())

	r := h.run("gate", "approve", runC, "wipe", "--remember")
	if r.code != ExitError || !strings.Contains(r.stderr, `--remember: no allow rule can name exactly "rm -rf $TARGET"`) ||
		!strings.Contains(r.stderr, `argument "$TARGET"`) || !strings.Contains(r.stderr, "nothing was published") {
		t.Errorf("--remember on a run-time variable = %+v", r)
	}
	r = h.run("gate", "approve", runC, "config", "--remember")
	if r.code != ExitError || !strings.Contains(r.stderr, "--remember applies to a policy gate of a shell command") {
		t.Errorf("--remember on a file patch = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Fatalf("%d events published by refused answers", n)
	}
	if r := h.run("gate", "approve", runC, "clean", "--remember"); r.code != 0 {
		t.Errorf("--remember on a plain command = %+v", r)
	}
	if _, ds := decided(t, h.events()); len(ds) != 1 || !ds[0].Remember || ds[0].Step != "clean" {
		t.Errorf("published %+v", ds)
	}
}

// TestGateSkipPlanGateRefused: a plan gate takes approve or deny; skip
// (which the leader ignores for a plan) is refused, nothing published.
func TestGateSkipPlanGateRefused(t *testing.T) {
	h := newSecureHarness(t).withNode()
	g := gatedDeploy()
	g.Step, g.Spec, g.Revision = "", nil, 1
	h.withGates(g)
	r := h.run("gate", "skip", runC, "--reason", "later")
	if r.code != ExitError || !strings.Contains(r.stderr, "a plan gate is approved or denied") {
		t.Errorf("gate skip of a plan gate = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Fatalf("%d events published", n)
	}
}
