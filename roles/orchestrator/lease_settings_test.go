package orchestrator_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"go.uber.org/goleak"
)

// TestLeaseTTLFollowsTheClusterSettings: with the node's settings
// (node/settings.Cluster) as its source, an orchestrator times its lease
// by the lease TTL of the newest cluster.settings event, and keeps its
// lease while the administrator brings the leader bucket's TTL to it.
func TestLeaseTTLFollowsTheClusterSettings(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("github.com/nats-io/nats.go.(*timeoutPool).run"))
	})
	conn := bustest.Connect(t, bustest.Server(t))
	ctx := context.Background()
	kv, err := conn.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	c := settings.New(settings.Config{Node: "n1", JS: conn.JS, CheckEvery: time.Hour})
	var (
		mu  sync.Mutex
		seq uint64
		o   *orchestrator.Orchestrator
	)
	// fold commits an event and folds it as the node does: one at a time,
	// settings first.
	fold := func(d event.Draft, node string) {
		mu.Lock()
		defer mu.Unlock()
		seq++
		ev := event.Event{Seq: seq, StreamSeq: seq, ID: d.ID, Type: d.Type, Node: node, Time: d.Time, Subject: d.Subject(), Data: d.Data}
		c.Fold(ev)
		o.Fold(ev)
	}
	o = orchestrator.New(roles.Env{Node: "n1", Logger: slog.New(slog.DiscardHandler), Emit: roles.EmitterFunc(func(_ context.Context, ds ...event.Draft) error {
		for _, d := range ds {
			fold(d, "n1")
		}
		return nil
	})}, orchestrator.Config{KV: kv, Settings: c, Incarnation: "i1"})
	for _, r := range []roles.Role{c, o} {
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := r.Stop(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	c.Settled(true)
	o.Settled(true)
	poll.Eventually(t, 20*time.Second, "a leader timing itself by the default TTL", func() bool {
		return o.Leader() != 0 && o.LeaseTTL() == event.DefaultLeaseTTL
	})

	s := settings.Default()
	s.Revision, s.LeaseTTL = 1, 4*time.Second
	fold(event.MustDraft(event.ClusterSettings, "", s.Data()), "operator")
	c.Settled(true)
	poll.Eventually(t, 20*time.Second, "the orchestrator timing itself by 4s", func() bool { return o.LeaseTTL() == 4*time.Second })
	// The administrator applies the settings to the bucket (nodes only
	// compare), as agentctl cluster settings set does.
	if _, err := settings.Apply(ctx, conn.JS, s); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "the bucket's TTL at 4s", func() bool {
		st, err := kv.Status(ctx)
		return err == nil && st.TTL() == 4*time.Second
	})
	if o.Leader() == 0 {
		t.Fatal("the TTL change cost the leadership")
	}
}
