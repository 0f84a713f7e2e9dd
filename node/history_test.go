package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// waitPlan's second step waits for a marker file, so the run is still
// running when the node stops; it is idempotent, so after the restart it
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

// A node whose ledger holds a long history (≥ 200k events) restarts, is
// ready, and a run that was running when it stopped carries on.
func TestRestartWithLongHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 200k-event history")
	}
	dir := t.TempDir()
	cfg := nodetest.Config(dir)
	marker := filepath.Join(t.TempDir(), "go")
	n := nodetest.Start(t, cfg)
	run := n.Submit(t, "wait.yaml", fmt.Sprintf(waitPlan, marker))
	poll.Eventually(t, 30*time.Second, "step wait running", func() bool {
		r, err := n.API.RunsGet(context.Background(), run)
		return err == nil && len(r.Steps) == 2 && r.Steps[1].Status == "running"
	})
	info, err := n.API.NodeInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	n.NC.Close()
	if err := n.Node.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	cancel()

	// The history lands on the node's own stream while it is down: 34
	// runs of 2,000 steps, ~204k events.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	events := publishHistory(t, ctx, dir, cfg.Name, nodetest.History{Runs: 34, Steps: 2000, Epoch: info.Epoch})
	if events < 200_000 {
		t.Fatalf("history of %d events, want at least 200k", events)
	}

	n = nodetest.Start(t, cfg)
	poll.Eventually(t, 2*time.Minute, "ready after folding the history", func() bool { return n.Ready() == nil })
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := n.WaitRun(t, run, 60*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run after restart: %s (%s)", r.Status, r.Reason)
	}
	if r.Steps[1].Attempt < 2 {
		t.Errorf("step wait: attempt %d, want a second attempt after the interruption", r.Steps[1].Attempt)
	}
}

// publishHistory starts a bare nats-server on a stopped node's JetStream
// store and publishes a synthetic history onto its events stream, signed
// by identities the node's root issues.
func publishHistory(t *testing.T, ctx context.Context, dir, name string, h nodetest.History) int {
	t.Helper()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: filepath.Join(dir, "nats"), ServerName: name})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: srv, Name: "history"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root, err := trust.LoadRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := nodetest.NewHistoryWriter(root)
	if err != nil {
		t.Fatal(err)
	}
	events, err := w.Publish(ctx, conn.JS, h)
	if err != nil {
		t.Fatal(err)
	}
	return events
}
