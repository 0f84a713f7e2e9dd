package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// chainsPlan is a plan of chains of shell steps: each step starts only
// when the one before it succeeded, so the run keeps the executor, the
// orchestrator and the ledger busy for the length of the chains.
func chainsPlan(chains, length int, command string) string {
	var b strings.Builder
	b.WriteString("goal: chains\nsteps:\n")
	for c := range chains {
		for i := range length {
			fmt.Fprintf(&b, "  - id: c%d-%d\n    run: %q\n", c, i, command)
			if i > 0 {
				fmt.Fprintf(&b, "    depends_on: [c%d-%d]\n", c, i-1)
			}
		}
	}
	return b.String()
}

// taskCounts counts the task.started and task.finished events of a run by
// step, from the node's ledger.
func taskCounts(t *testing.T, n *nodetest.Node, run string) (started, finished map[string]int) {
	t.Helper()
	started, finished = map[string]int{}, map[string]int{}
	for line, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatalf("audit of run %s: %v", run, err)
		}
		var d struct {
			Step string `json:"step"`
		}
		switch line.Type {
		case string(event.TaskStarted):
			if err := json.Unmarshal(line.Data, &d); err != nil {
				t.Fatal(err)
			}
			started[d.Step]++
		case string(event.TaskFinished):
			if err := json.Unmarshal(line.Data, &d); err != nil {
				t.Fatal(err)
			}
			finished[d.Step]++
		}
	}
	return started, finished
}

// TestNodeSurvivesANATSServerRestart: a node on a three-server NATS
// cluster (R3 streams) runs a plan while the server it is connected to is
// stopped and started again, twice. The node's connection moves to
// another server, the ledger follower and the executor's consumer resume,
// the run goes on while the server is down, and nothing is lost or run
// twice: every step succeeds on its first attempt, started and finished
// once, the ledger records no gap and verifies.
func TestNodeSurvivesANATSServerRestart(t *testing.T) {
	c := bustest.Cluster(t, 3)
	cfg := nodetest.Config(t.TempDir())
	cfg.NATS = c.URLs()
	n := nodetest.Start(t, cfg)

	const chains, length = 3, 25
	run := n.Submit(t, "chains.yaml", chainsPlan(chains, length, "sleep 0.1"))
	succeeded := func() int {
		s, err := n.API.RunSummary(context.Background(), run)
		if err != nil {
			return -1
		}
		return s.StepCounts["succeeded"]
	}
	// Twice: stop the server the node is on, see the run go on without
	// it, start it again. The second time the node is on another server,
	// which the first restart's server now serves alongside.
	for range 2 {
		on := -1
		for i := range c.Len() {
			if c.URL(i) == n.NATSURL() {
				on = i
			}
		}
		if on < 0 {
			t.Fatalf("node on %s, not one of the cluster's servers %v", n.NATSURL(), c.URLs())
		}
		before := succeeded()
		c.Stop(on)
		poll.Eventually(t, 60*time.Second, "the run to go on while server "+c.Name(on)+" is down", func() bool {
			return succeeded() >= before+3
		})
		c.Start(on)
		c.WaitHealthy()
	}

	r := n.WaitRun(t, run, 120*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	if len(r.Steps) != chains*length {
		t.Fatalf("%d steps, want %d", len(r.Steps), chains*length)
	}
	started, finished := taskCounts(t, n, run)
	for _, s := range r.Steps {
		if s.Status != "succeeded" || s.Attempt != 1 || started[s.ID] != 1 || finished[s.ID] != 1 {
			t.Errorf("step %s: %s, attempt %d, started %d, finished %d times; want succeeded at the first attempt, started and finished once",
				s.ID, s.Status, s.Attempt, started[s.ID], finished[s.ID])
		}
	}
	gaps := 0
	for line, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if line.Type == string(event.Gap) {
			gaps++
		}
	}
	if gaps != 0 {
		t.Errorf("the ledger recorded %d gaps in the stream", gaps)
	}
	v, err := n.API.LedgerVerify(context.Background())
	if err != nil || !v.OK {
		t.Errorf("ledger verify: %+v, %v", v, err)
	}
	if err := n.Ready(); err != nil {
		t.Errorf("node not ready after the restart: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{bus.EventsStream, bus.LogsStream} {
		s, err := n.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("%s: %d replicas, want 3", name, got)
		}
	}
}
