package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
)

// noPlannerNode starts a node with roles (all when none) and sets the
// cluster's claim timeout to 1s, as an operator would.
func noPlannerNode(t *testing.T, roles ...string) (*harness, *nodetest.Node) {
	t.Helper()
	cfg := nodetest.Config(t.TempDir())
	if len(roles) > 0 {
		cfg.Roles = roles
	}
	n := nodetest.Start(t, cfg)
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}
	if r := h.run("cluster", "settings", "set", "--claim-timeout", "1s", "--timeout", "20s"); r.code != 0 || !strings.Contains(r.stdout, "claim timeout 1s") {
		t.Fatalf("cluster settings set = %+v", r)
	}
	return h, n
}

// runJSON is the run show -o json fields the tests look at.
type runJSON struct {
	Status string `json:"status"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// TestNoPlannerNodeFailsTheGoal: with no planner node at all, a goal
// fails with code no_planner once the claim timeout (the cluster
// setting, 1s) and its margin have passed, decided by the leader; replay
// decides the same.
func TestNoPlannerNodeFailsTheGoal(t *testing.T) {
	h, n := noPlannerNode(t, event.RoleOrchestrator, event.RoleExecutor)
	start := time.Now()
	r := n.WaitRun(t, n.Submit(t, "hello.yaml", "steps:\n  - id: a\n    run: echo hi\n"), 30*time.Second)
	if r.Status != event.RunFailed || r.Code != "no_planner" || !strings.Contains(r.Reason, "no planner answered the goal within 2s (the claim timeout 1s and a margin)") {
		t.Fatalf("run %s: %s %s (%s)", r.ID, r.Status, r.Code, r.Reason)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("failed after %v, before the claim timeout and its margin", took)
	}
	res := h.run("run", "show", r.ID, "-o", "json")
	var v runJSON
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil || res.code != 0 || v.Status != "failed" || v.Code != "no_planner" {
		t.Fatalf("run show -o json = %+v (%v)", res, err)
	}
	if res = h.run("run", "show", r.ID); res.code != 0 || !strings.Contains(res.stdout, "reason    no planner answered the goal") {
		t.Fatalf("run show = %+v", res)
	}
	res = h.run("run", "replay", r.ID, "-o", "json", "--timeout", "20s")
	var rep replay.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 || rep.Diverged() || rep.Checked != 1 || rep.Finished != event.RunFailed {
		t.Fatalf("run replay = %+v (%v)", res, err)
	}
}

// TestPlannerTimesNoPlannerByTheClusterSetting: a live planner that
// cannot plan a free-text goal (no model) rejects it with no_planner
// after the cluster's claim timeout, not its configuration's, and before
// the leader would: its rejection says why.
func TestPlannerTimesNoPlannerByTheClusterSetting(t *testing.T) {
	_, n := noPlannerNode(t)
	run := event.NewID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "tidy the logs", Text: "tidy the logs"})); err != nil {
		t.Fatal(err)
	}
	r := n.WaitRun(t, run, 30*time.Second)
	if r.Status != event.RunFailed || r.Code != "no_planner" ||
		!strings.Contains(r.Reason, "plan rejected: planner: no planner that can plan this goal claimed it within 1s") {
		t.Fatalf("run %s: %s %s (%s)", r.ID, r.Status, r.Code, r.Reason)
	}
}

// TestPlanFileRunsWithoutAPlanner: agentctl sends a plan file's plan in
// its goal, and the leader plans the run from it, so a plan file runs on
// a node with no planner at all; plan show shows that plan (revision 1,
// source file, accepted) though no planner ever proposed it, and a
// replay reproduces the run's decisions.
func TestPlanFileRunsWithoutAPlanner(t *testing.T) {
	h, _ := noPlannerNode(t, event.RoleOrchestrator, event.RoleExecutor)
	path := writePlan(t, "hello.yaml", goodPlan)
	r := h.run("goal", "submit", "-f", path, "--wait", "--timeout", "30s", "-o", "json")
	var run struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || r.code != 0 || run.Status != "succeeded" {
		t.Fatalf("submit --wait = %+v (%v)", r, err)
	}
	r = h.run("plan", "show", run.ID, "-o", "json")
	var rev planRevision
	if err := json.Unmarshal([]byte(r.stdout), &rev); err != nil || r.code != 0 || rev.Revision != 1 || !rev.Accepted || rev.Source != "file" || len(rev.Plan.Steps) != 2 {
		t.Fatalf("plan show -o json = %+v (%v)", r, err)
	}
	r = h.run("run", "replay", run.ID, "-o", "json", "--timeout", "20s")
	var rep replay.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Diverged() || rep.Checked < 3 || rep.Finished != event.RunSucceeded {
		t.Fatalf("run replay = %+v (%v)", r, err)
	}
}
