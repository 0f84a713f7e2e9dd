package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/agentic-dev/agentic/roles/orchestrator"
)

// TestLeaderCheckBlocksAnOrchestratorNode: on a node with the orchestrator
// role the leader check blocks readiness. A foreign write over the lease
// (the key holds no lease) makes the leader step down at once, while no
// orchestrator may take the key over before a lease TTL has passed with
// it unchanged: for that TTL the node is not ready, naming the leader
// check; then it leads again and is ready.
//
// The trigger is a foreign write rather than a holder that stops
// renewing: a lease not renewed is found stale by the check and taken
// over by a standby after the same TTL, by the same clock, so whether a
// window of unreadiness shows between the two is a race.
func TestLeaderCheckBlocksAnOrchestratorNode(t *testing.T) {
	dir := t.TempDir()
	root := nodetest.NewRoot(t, dir)
	srv := bustest.SecureServer(t, root)
	cfg := nodetest.Config(dir)
	cfg.Name, cfg.Roles, cfg.NATS = "lead-a", []string{event.RoleOrchestrator}, []string{srv.ClientURL()}
	a := nodetest.Start(t, cfg)
	poll.Eventually(t, 20*time.Second, "lead-a leading and ready", func() bool {
		i := a.Info()
		return i.Leader == "lead-a" && i.Ready
	})
	ctx := context.Background()

	// A long lease TTL: the window between the step-down and the new
	// lease is that long, far longer than a probe round (a second).
	const ttl = 20 * time.Second
	s := settings.Default()
	s.Revision, s.LeaseTTL = 1, ttl
	if err := bus.PublishSigned(ctx, a.JS, a.Operator, event.MustDraft(event.ClusterSettings, "", s.Data())); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "the lease TTL in force", func() bool {
		var in settings.InForce
		return a.API.Call(ctx, settings.Method, struct{}{}, &in) == nil && in.Revision == 1 && in.CheckedRevision == 1
	})
	// Applied to the leader bucket by the administrator (the test's
	// operator.creds, as agentctl cluster settings set does).
	if _, err := settings.Apply(ctx, a.JS, s); err != nil {
		t.Fatal(err)
	}
	epoch := a.Info().Epoch

	// The foreign write: no identity but an orchestrator may write the
	// bucket, so the test harness makes it.
	harness := bustest.Harness(t, bus.ConnConfig{URLs: []string{srv.ClientURL()}}, root)
	kv, err := harness.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, orchestrator.LeaseKey, []byte("not a lease")); err != nil {
		t.Fatal(err)
	}
	var notReady error
	poll.Eventually(t, ttl/2, "lead-a not ready for want of a leader", func() bool {
		notReady = a.Ready()
		return notReady != nil && strings.HasPrefix(notReady.Error(), health.CheckLeader+": the lease key holds no lease")
	})
	info := a.Info()
	var leader *health.Status
	for _, c := range info.Checks {
		if c.Name == health.CheckLeader {
			leader = &c
		}
	}
	if leader == nil || leader.OK || !leader.Blocking {
		t.Errorf("leader check on an orchestrator node: %+v, want failing and blocking", leader)
	}
	for _, c := range info.Checks {
		if c.Name != health.CheckLeader && c.Blocking && !c.OK {
			t.Errorf("blocking check %s fails too (%s): the leader check alone should", c.Name, c.Reason)
		}
	}

	poll.Eventually(t, 3*ttl, "lead-a leading again and ready", func() bool {
		i := a.Info()
		return i.Leader == "lead-a" && i.Epoch > epoch && i.Ready && a.Ready() == nil
	})
}
