package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// waitPlan's second step waits for a marker file, so the run is still
// running when agentd dies; it is idempotent, so after the restart it
// runs again and the run carries on.
const waitPlan = `goal: carry on
steps:
  - id: first
    kind: noop
  - id: wait
    run: while [ ! -f "$MARKER" ]; do sleep 0.05; done
    depends_on: [first]
    idempotent: true
    env: {MARKER: %s}
`

// agentd restarts on a ledger of more than 200k events and is ready, and a
// run that was running when it was killed carries on. The history (34 runs of
// 2,000 steps, properly signed by identities the node's root issues) lands
// on the node's own stream while it is down, so the restart folds it.
func TestRestartWithLongHistory(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	marker := filepath.Join(t.TempDir(), "go")
	plan := filepath.Join(t.TempDir(), "wait.yaml")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(waitPlan, marker)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := a.submit(plan)
	poll.Eventually(t, 30*time.Second, "step wait running", func() bool {
		v, err := a.tryRunShow(run)
		s, ok := v.lookup("wait")
		return err == nil && ok && s.Status == "running"
	})
	epoch := nodeEpoch(t, a)
	a.kill9()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	events := nodetest.PublishHistory(t, ctx, a.data, a.name, nodetest.History{Runs: 34, Steps: 2000, Epoch: epoch})
	if events < 200_000 {
		t.Fatalf("history of %d events, want at least 200k", events)
	}

	a.restart()
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v := a.waitRun(run, time.Minute)
	if v.Status != "succeeded" {
		t.Fatalf("run after restart:\n%s", v.dump())
	}
	if s := v.step(t, "wait"); s.Attempt < 2 {
		t.Errorf("step wait: attempt %d, want a second attempt after the interruption", s.Attempt)
	}
	var sum []runSummary
	if err := json.Unmarshal([]byte(a.mustCtl("run", "list", "--limit", "0", "-o", "json")), &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum) != 35 {
		t.Errorf("run list has %d runs, want 35 (34 from the history and the carried-on one)", len(sum))
	}
}

// nodeEpoch asks a node for the leader epoch in force.
func nodeEpoch(t *testing.T, a *agentd) uint64 {
	t.Helper()
	nc, err := a.natsConn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	info, err := api.NewClient(nc, 10*time.Second).NodeInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.Epoch
}
