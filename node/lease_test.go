package node_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

const failoverPlan = `goal: failover
steps:
  - id: first
    run: sleep 0.5; echo first
  - id: second
    run: echo second
    depends_on: [first]
`

// TestLeaderStopsAndTheStandbyFinishesTheRun: two orchestrator nodes on
// one JetStream server; the leader stops while a run is running, the
// other node takes the lease over with the next epoch and the run
// finishes under it.
func TestLeaderStopsAndTheStandbyFinishesTheRun(t *testing.T) {
	dirA := t.TempDir()
	root := nodetest.NewRoot(t, dirA)
	srv := bustest.SecureServer(t, root)
	cfgA := nodetest.Config(dirA)
	cfgA.Name, cfgA.Roles, cfgA.NATS = "lead-a", []string{event.RoleOrchestrator}, []string{srv.ClientURL()}
	a := nodetest.Start(t, cfgA)
	poll.Eventually(t, 20*time.Second, "lead-a leading", func() bool { return a.Info().Leader == "lead-a" })

	// b is enrolled from a's root; the operator's credentials come along
	// for the test's client.
	cfgB := nodetest.PeerConfig(t, srv.ClientURL(), root, "lead-b", event.RoleOrchestrator, event.RolePlanner, event.RoleExecutor)
	b := nodetest.Start(t, cfgB)

	run := b.Submit(t, "failover.yaml", failoverPlan)
	poll.Eventually(t, 20*time.Second, "step first running", func() bool {
		r, err := b.API.RunsGet(context.Background(), run)
		return err == nil && len(r.Steps) == 2 && r.Steps[0].Status == "running"
	})
	a.Stop(t)
	poll.Eventually(t, 20*time.Second, "lead-b leading at epoch 2", func() bool {
		i := b.Info()
		return i.Leader == "lead-b" && i.Epoch == 2
	})
	r := b.WaitRun(t, run, 30*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	for _, s := range r.Steps {
		if s.Status != "succeeded" || s.Attempt != 1 {
			t.Errorf("step %s: %s at attempt %d, want succeeded at attempt 1", s.ID, s.Status, s.Attempt)
		}
	}
	// The second step was assigned by lead-b, at epoch 2.
	var assigned []uint64
	for l, err := range b.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.TaskAssigned) {
			var d event.TaskAssignedData
			if err := json.Unmarshal(l.Data, &d); err != nil {
				t.Fatal(err)
			}
			assigned = append(assigned, d.Epoch)
		}
	}
	if len(assigned) != 2 || assigned[0] != 1 || assigned[1] != 2 {
		t.Fatalf("assignments at epochs %v, want [1 2]", assigned)
	}
}
