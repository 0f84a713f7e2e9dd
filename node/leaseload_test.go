package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/nats-io/nats.go/jetstream"
)

// A node busy with large model answers keeps its leader lease: ten 3 MB
// answers at once (the goals submitted together; the planner parses each
// answer and builds a 3 MB event before refusing it as too large) with
// the default TTL give no new epoch. Before the renewals ran to the
// lease's end, the longest time between two lease writes here was 1.3 to
// 1.6 s under -race, against a TTL of 1.5 s; it is about 0.75 s now.
func TestBusyNodeKeepsItsLease(t *testing.T) {
	if testing.Short() {
		t.Skip("15 s of load")
	}
	pad := strings.Repeat("All work and no play makes a long answer. ", 3<<20/43)
	srv := modelServer(t, pad+"\n```json\n"+`{"steps": [{"id": "hello", "run": "echo hello"}]}`+"\n```")
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	var epoch uint64
	poll.Eventually(t, 20*time.Second, "a leader", func() bool {
		in := n.Info()
		epoch = in.Epoch
		return in.Leader == "test-node" && epoch > 0
	})
	// The lease's writes, timed as they arrive.
	kv, err := n.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, orchestrator.LeaseKey, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	gaps := make(chan time.Duration, 1)
	go func() {
		last, worst := time.Now(), time.Duration(0)
		for range w.Updates() {
			now := time.Now()
			worst = max(worst, now.Sub(last))
			last = now
		}
		gaps <- worst
	}()
	var runs []string
	for i := range 10 {
		runs = append(runs, submitText(t, n, "say hello "+string(rune('a'+i))))
	}
	for _, run := range runs {
		r := n.WaitRun(t, run, 60*time.Second)
		t.Logf("run %s: %s %s", r.ID, r.Status, r.Reason)
	}
	_ = w.Stop()
	worst := <-gaps
	t.Logf("longest time between two lease writes: %s (TTL %s)", worst, event.DefaultLeaseTTL)
	elected := 0
	for _, err := range n.API.AuditLines(ctx, api.AuditRequest{Types: []string{string(event.LeaderElected)}}) {
		if err != nil {
			t.Fatal(err)
		}
		elected++
	}
	if in := n.Info(); in.Epoch != epoch || elected != 1 {
		t.Fatalf("the busy node's epoch went from %d to %d (%d leader.elected in the ledger, want 1)", epoch, in.Epoch, elected)
	}
}
