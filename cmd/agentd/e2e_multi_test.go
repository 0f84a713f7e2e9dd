package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/internal/freeport"
)

// spreadPlan writes a plan of n independent shell steps s01…sNN, each
// sleeping a little and printing its own id, and returns its path.
func spreadPlan(t *testing.T, goal string, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "goal: %s\nsteps:\n", goal)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: s%02d\n    run: sleep 0.3; echo s%02d\n", i, i)
	}
	p := filepath.Join(t.TempDir(), "spread.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// nodesOf returns the nodes run v's steps ran on, sorted, and fails t
// unless every step succeeded.
func nodesOf(t *testing.T, v runView) []string {
	t.Helper()
	var nodes []string
	for _, s := range v.Steps {
		if s.Status != "succeeded" || s.Attempt != 1 || s.Node == "" {
			t.Errorf("step %s: %s attempt %d on %q, want succeeded at attempt 1 on a node", s.ID, s.Status, s.Attempt, s.Node)
		}
		if !slices.Contains(nodes, s.Node) {
			nodes = append(nodes, s.Node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// startPair starts agentd A (every role, embedded NATS, 2 executor slots)
// and agentd B, an executor-only process with 4 slots enrolled with
// agentctl node enroll from A's root and joined to A's NATS server, both
// in one gossip membership (B joins A), and waits until A's ledger holds
// B's executor.online, signed with B's enrolled credential, and the
// leader's node.joined for B.
func startPair(t *testing.T) (a, b *agentd) {
	t.Helper()
	a = newAgentd(t, "--executor-slots", "2")
	a.gossip = "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	a.extra = append(a.extra, "--gossip-listen", a.gossip)
	a.start()
	a.waitReady()

	b = newAgentd(t)
	b.name = "exec-b"
	b.enrolled = true
	b.gossip = "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	b.extra = []string{"--roles", "executor", "--nats", a.natsURL(), "--executor-slots", "4", "--gossip-listen", b.gossip, "--join", a.gossip}
	out := a.mustCtl("node", "enroll", b.name, "--roles", "executor", "--root", a.data, "--out", b.data)
	if !strings.Contains(out, "enrolled node exec-b") {
		t.Fatalf("node enroll printed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(b.data, "root.key")); err == nil {
		t.Fatal("node enroll copied the root key into the node's data dir")
	}
	b.start()
	b.waitReady()
	if _, err := os.Stat(filepath.Join(b.data, "root.key")); err == nil {
		t.Fatal("the enrolled node made a root of its own")
	}
	poll.Eventually(t, 20*time.Second, "executor.online from exec-b and node.joined for it in A's audit", func() bool {
		online, joined := false, false
		for _, l := range a.audit() {
			online = online || l.Type == "executor.online" && l.Node == b.name
			joined = joined || l.Type == "node.joined" && strings.Contains(string(l.Data), `"node":"`+b.name+`"`)
		}
		return online && joined
	})
	return a, b
}

// stopGracefully sends SIGTERM to a and wants exit 0.
func stopGracefully(t *testing.T, a *agentd) {
	t.Helper()
	a.signal(syscall.SIGTERM)
	st := a.wait(20 * time.Second)
	if st == nil {
		t.Fatalf("%s still running 20s after SIGTERM", a.name)
	}
	if st.ExitCode() != 0 {
		t.Fatalf("%s exited %d after SIGTERM, want 0; log:\n%s", a.name, st.ExitCode(), a.logTail(30))
	}
}

// TestTwoNodesShareWork: a second, executor-only agentd process, enrolled
// with agentctl node enroll from the first node's root and joined over
// NATS, takes a share of a run's steps; the ledger accepts its events.
func TestTwoNodesShareWork(t *testing.T) {
	requireE2E(t)
	a, b := startPair(t)

	id := a.submit(spreadPlan(t, "Spread over two executors", 12))
	v := a.waitRun(id, 30*time.Second)
	if v.Status != "succeeded" || len(v.Steps) != 12 {
		t.Fatalf("run on two nodes: want succeeded with 12 steps, got:\n%s", v.dump())
	}
	if nodes := nodesOf(t, v); !slices.Equal(nodes, []string{a.name, b.name}) {
		t.Fatalf("steps ran on %v, want on both %s and %s:\n%s", nodes, a.name, b.name, v.dump())
	}
	started := map[string]bool{}
	for _, l := range a.audit("--run", id) {
		switch l.Type {
		case "event.rejected":
			t.Errorf("audit seq %d: an event was rejected: %s", l.Seq, l.Data)
		case "task.started":
			started[l.Node] = true
		}
	}
	if !started[b.name] {
		t.Errorf("audit: no task.started signed by %s", b.name)
	}
	a.verifyLedger()
	stopGracefully(t, b)
}

// TestWorkGoesOnAfterExecutorLeaves: once the executor-only node has
// stopped (SIGTERM, exit 0), the first node runs the next plan alone: the
// stopping node left the gossip membership, the leader recorded node.left
// and assigns nothing more to it.
func TestWorkGoesOnAfterExecutorLeaves(t *testing.T) {
	requireE2E(t)
	a, b := startPair(t)
	stopGracefully(t, b)
	poll.Eventually(t, 20*time.Second, "the leader to record exec-b left", func() bool {
		for _, l := range a.audit() {
			if l.Type == "node.left" && strings.Contains(string(l.Data), `"node":"`+b.name+`"`) {
				return true
			}
		}
		return false
	})

	id := a.submit(spreadPlan(t, "Run on the node that is left", 3))
	// Three 0.3s steps on A's two slots take about a second.
	v := a.waitRun(id, 15*time.Second)
	if v.Status != "succeeded" {
		t.Fatalf("run after exec-b left: want succeeded, got:\n%s", v.dump())
	}
	if nodes := nodesOf(t, v); !slices.Equal(nodes, []string{a.name}) {
		t.Fatalf("after exec-b left, steps ran on %v, want only %s:\n%s", nodes, a.name, v.dump())
	}
	a.verifyLedger()
}
