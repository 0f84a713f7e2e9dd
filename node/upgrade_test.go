package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestStreamsOfAnOpenServerMoveToTheAccount: a data dir written by a
// version whose embedded server took anonymous clients keeps its streams
// in nats-server's global account. The first start under NATS
// authentication moves them to the cluster's account, sequences kept: the
// node folds the history they hold and runs on.
func TestStreamsOfAnOpenServerMoveToTheAccount(t *testing.T) {
	dir := t.TempDir()
	root := nodetest.NewRoot(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: filepath.Join(dir, "nats"), ServerName: "test-node"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: srv, Name: "old-version"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	w, err := nodetest.NewHistoryWriter(root)
	if err != nil {
		t.Fatal(err)
	}
	events, err := w.Publish(ctx, conn.JS, nodetest.History{Runs: 2, Steps: 3})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	srv.Shutdown()

	n := nodetest.Start(t, nodetest.Config(dir))
	poll.Eventually(t, 30*time.Second, "the history folded", func() bool {
		p, err := n.API.RunsList(ctx, api.RunsListRequest{Limit: 10})
		return err == nil && len(p.Items) == 2
	})
	st, err := n.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if last := st.CachedInfo().State.LastSeq; last < uint64(1) || st.CachedInfo().State.Msgs == 0 {
		t.Fatalf("the events stream after the move: %+v (published %d events)", st.CachedInfo().State, events)
	}
	r := n.WaitRun(t, n.Submit(t, "after.yaml", "goal: after\nsteps:\n  - id: one\n    run: \"true\"\n"), 30*time.Second)
	if r.Status != "succeeded" {
		t.Fatalf("a run after the move: %s (%s)", r.Status, r.Reason)
	}
}
