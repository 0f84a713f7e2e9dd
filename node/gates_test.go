package node_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// gatedRun starts a node whose --policy file gates "rm -rf", and submits a
// run of one step that the policy gates, which appends a line to marker
// when it runs.
func gatedRun(t *testing.T) (n *nodetest.Node, run, marker string) {
	t.Helper()
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("name: gatekeeper\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n    action: confirm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker = filepath.Join(dir, "marker")
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Policy = policyFile
	n = nodetest.Start(t, cfg)
	run = submitGoal(t, n, "wipe", "goal: wipe\nsteps:\n  - id: wipe\n    run: \"echo ran >> "+marker+" && rm -rf ./build\"\n")
	return n, run, marker
}

// A node started with --policy records that policy as the first one; a
// step it gates is listed by gates.list and does not run — its marker file
// stays absent — until an operator approves it, then runs exactly once.
func TestGatedStepRunsOnceAfterApproval(t *testing.T) {
	n, run, marker := gatedRun(t)
	ctx := context.Background()
	var gates []api.Gate
	poll.Eventually(t, 30*time.Second, "the step's gate is listed", func() bool {
		var err error
		gates, err = n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		return err == nil && len(gates) == 1
	})
	g := gates[0]
	if g.Step != "wipe" || g.Kind != event.GatePolicy || g.Verdict == nil || g.Verdict.Rule != "rm -rf" || g.Policy.Version != 1 ||
		g.Approvals != 1 || g.Spec == nil || !strings.Contains(g.Spec.Run, "rm -rf") {
		t.Fatalf("gate %+v", g)
	}
	for range 5 { // at every look before the approval: gated, never run
		s, err := n.API.RunSummary(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if s.StepCounts["gated"] != 1 {
			t.Fatalf("run %s: steps %v, want one gated", run, s.StepCounts)
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("the gated step ran before its approval (%v)", err)
		}
	}
	d := event.MustDraft(event.GateDecided, run, event.GateDecidedData{Step: "wipe", Subject: g.Subject, Action: event.GateAccept})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, n, []string{run})
	s, err := n.API.RunSummary(ctx, run)
	if err != nil || s.Status != event.RunSucceeded {
		t.Fatalf("run %s: %+v %v", run, s, err)
	}
	b, err := os.ReadFile(marker)
	if err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q (%v): want the step run exactly once", b, err)
	}
	if left, err := n.API.GatesAll(ctx, api.GatesRequest{}); err != nil || len(left) != 0 {
		t.Fatalf("gates after the approval: %v %v", left, err)
	}
}

// Stopped between the approval and the run (no executor could take the
// step before), the node restarts with its approval standing: the step
// runs, once, without a new approval.
func TestApprovalSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Roles = slices.DeleteFunc(slices.Clone(cfg.Roles), func(r string) bool { return r == event.RoleExecutor })
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	run := submitGoal(t, n, "wipe", "goal: wipe\nsteps:\n  - id: wipe\n    run: \"echo ran >> "+marker+" && rm -rf ./build\"\n")
	var gates []api.Gate
	poll.Eventually(t, 30*time.Second, "the step's gate is listed", func() bool {
		var err error
		gates, err = n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		return err == nil && len(gates) == 1
	})
	d := event.MustDraft(event.GateDecided, run, event.GateDecidedData{Step: "wipe", Subject: gates[0].Subject, Action: event.GateAccept})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the step is approved and waits for an executor", func() bool {
		s, err := n.API.RunSummary(ctx, run)
		return err == nil && s.StepCounts["ready"] == 1
	})
	n.Stop(t)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the step ran without an executor (%v)", err)
	}

	cfg.Roles = nodetest.Config("").Roles
	n = nodetest.Start(t, cfg)
	waitFinished(t, n, []string{run})
	full, err := n.API.RunsGet(ctx, run)
	if err != nil || full.Status != event.RunSucceeded || len(full.Steps) != 1 ||
		full.Steps[0].Attempt != 1 || len(full.Steps[0].Approvers) != 1 {
		t.Fatalf("run %s after the restart: %+v %v", run, full, err)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q (%v): want the step run exactly once", b, err)
	}
}
