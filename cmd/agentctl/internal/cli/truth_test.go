package cli

import (
	"regexp"
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

// TestRunShowBySuffix: time-ordered ids share their start, so a run is
// also named by the end of its id (among the newest runs); a short form
// that names none says so as before.
func TestRunShowBySuffix(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = fixtureRuns() })
	r := h.run("run", "show", "0003")
	if r.code != 0 || !strings.Contains(r.stdout, "run       "+runC) {
		t.Fatalf("run show by the end of the id = %+v", r)
	}
	// run B is finished: the refusal names it in full.
	r = h.run("run", "cancel", "0002", "--reason", "by its end")
	if r.code != ExitError || !strings.Contains(r.stderr, "run "+runB+" already finished") {
		t.Errorf("run cancel by the end of the id = %+v", r)
	}
	r = h.run("run", "show", "9999")
	if r.code != ExitError || r.stderr != "error: api: not found: no run matches \"9999\"\nhint: list them with: agentctl run list\n" {
		t.Errorf("run show of nothing = %+v", r)
	}
}

// TestGateShowBySuffix: a gate's run is named by the end of its id too.
func TestGateShowBySuffix(t *testing.T) {
	h := newSecureHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = fixtureRuns() })
	h.withGates(gatedDeploy())
	if r := h.run("gate", "show", "0003", "deploy"); r.code != 0 || !strings.Contains(r.stdout, "run         "+runC) {
		t.Errorf("gate show by the end of the run id = %+v", r)
	}
}

// TestGoalSubmitWaitTellsFailuresReplansAndGates: --wait shows a failed
// attempt that will be tried again, the run waiting for a replan and the
// new revision, and a gate that waits for an operator with the command
// that shows it.
func TestGoalSubmitWaitTellsFailuresReplansAndGates(t *testing.T) {
	h := newSecureHarness(t).withNode()
	gs := h.withGates()
	t0 := time.Now()
	states := []api.Run{
		{Status: "running", Revision: 1, Steps: []api.Step{{ID: "test", Status: "running", Attempt: 1, Node: "node-a", StartedAt: &t0}}},
		{Status: "running", Revision: 1, Steps: []api.Step{{ID: "test", Status: "ready", Attempt: 1, Node: "node-a", ExitCode: ptr(1),
			Error: "exit status 1", Code: "exit_nonzero", StartedAt: &t0, FinishedAt: &t0}}},
		{Status: "running", Revision: 1, Reason: "waiting for plan revision 2 from the planner (replan 1)", Steps: []api.Step{{ID: "test", Status: "failed", Attempt: 2, Node: "node-a",
			ExitCode: ptr(1), Error: "exit status 1", StartedAt: &t0, FinishedAt: &t0}}},
		{Status: "running", Revision: 2, Steps: []api.Step{{ID: "test", Status: "pending", Attempt: 2, Reassigned: 2}}},
		{Status: "running", Revision: 2, Steps: []api.Step{{ID: "test", Status: "pending", Attempt: 2, Reassigned: 2}}},
		{Status: "succeeded", Revision: 2, Steps: []api.Step{{ID: "test", Status: "succeeded", Attempt: 3, Reassigned: 2, Node: "node-b", ExitCode: ptr(0)}}},
	}
	h.node.with(func(f *fakeNode) {
		f.progress = func(id string, call int) (*api.Run, error) {
			if call == 3 {
				gs.mu.Lock()
				gs.gates = []api.Gate{{Run: id, Revision: 2, Kind: event.GatePlan, Subject: "sha256:ab", Approvals: 1, Opened: t0,
					Verdict: &event.Verdict{Action: "confirm", Level: "high", Why: "1 of 1 steps need more than allow"}}}
				gs.mu.Unlock()
			}
			if call == 5 {
				gs.mu.Lock()
				gs.gates = nil
				gs.mu.Unlock()
			}
			r := states[min(call, len(states)-1)]
			r.ID = id
			return &r, nil
		}
	})
	r := h.run("goal", "submit", "-f", writePlan(t, "hello.yaml", goodPlan), "--wait")
	if r.code != 0 {
		t.Fatalf("goal submit --wait = %+v", r)
	}
	line := `\d\d:\d\d:\d\d `
	for _, want := range []string{
		line + `test +failed +\(attempt 1 on node-a, exit 1, 0s, exit status 1\); it will be tried again$`,
		line + `run +running: waiting for plan revision 2 from the planner \(replan 1\)$`,
		line + `plan +revision 2$`,
		line + `gate +\(plan\) +waits for an operator: confirm \(level high\): 1 of 1 steps need more than allow; see: agentctl gate show [0-9a-f-]{36}$`,
	} {
		if !regexp.MustCompile(`(?m)^` + want).MatchString(r.stdout) {
			t.Errorf("progress lacks /%s/:\n%s", want, r.stdout)
		}
	}
}
