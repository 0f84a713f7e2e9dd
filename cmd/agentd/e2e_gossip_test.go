package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/internal/freeport"
)

// nodeRow is the documented node object of agentctl node ls -o json
// (docs/cli.md), decoded on the test's side.
type nodeRow struct {
	Name     string   `json:"name"`
	Roles    []string `json:"roles"`
	Slots    int      `json:"slots"`
	State    string   `json:"state"`
	Recorded string   `json:"recorded_state"`
	Gossip   string   `json:"gossip_state"`
	Leader   bool     `json:"leader"`
	Epoch    uint64   `json:"epoch"`
	Draining bool     `json:"draining"`
}

func (a *agentd) nodes() map[string]nodeRow {
	a.t.Helper()
	var rows []nodeRow
	if err := json.Unmarshal([]byte(a.mustCtl("node", "ls", "-o", "json")), &rows); err != nil {
		a.t.Fatalf("node ls -o json: %v", err)
	}
	out := map[string]nodeRow{}
	for _, r := range rows {
		out[r.Name] = r
	}
	return out
}

// TestGossipAcrossProcesses: agentd A (every role) and an executor-only B
// gossip, encrypted, B joining A. node ls on A shows both alive; node
// drain B makes it stop and leave; a restarted B is alive again, and once
// killed (kill -9) it is dead.
func TestGossipAcrossProcesses(t *testing.T) {
	requireE2E(t)
	key := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(key, []byte("MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gossipA := "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	a := startAgentd(t, "--executor-slots", "2", "--gossip-listen", gossipA, "--gossip-key-file", key)
	if !strings.Contains(a.log(), "gossip    "+gossipA) {
		t.Errorf("the banner does not show gossip on %s:\n%s", gossipA, a.logTail(20))
	}

	b := newAgentd(t)
	b.name, b.enrolled = "exec-b", true
	b.extra = []string{"--roles", "executor", "--nats", a.natsURL(), "--executor-slots", "4",
		"--gossip-listen", "127.0.0.1:" + strconv.Itoa(freeport.Port(t)), "--gossip-key-file", key, "--join", gossipA}
	a.mustCtl("node", "enroll", b.name, "--roles", "executor", "--root", a.data, "--out", b.data)
	b.start()
	b.waitReady()

	var rows map[string]nodeRow
	poll.Eventually(t, 30*time.Second, "node ls to show both nodes alive", func() bool {
		rows = a.nodes()
		ra, rb := rows[a.name], rows[b.name]
		return ra.State == "alive" && ra.Leader && ra.Epoch > 0 && rb.State == "alive" && rb.Gossip == "alive" && rb.Slots == 4
	})
	if out := a.mustCtl("node", "ls"); !strings.Contains(out, "answered by e2e; gossip "+gossipA) {
		t.Errorf("node ls:\n%s", out)
	}

	// Drained, B stops, exits 0 and has left.
	if out := a.mustCtl("node", "drain", b.name, "--reason", "e2e", "--wait", "--wait-timeout", "30s"); !strings.Contains(out, "node exec-b drained and left") {
		t.Fatalf("node drain --wait printed:\n%s", out)
	}
	if st := b.wait(20 * time.Second); st == nil || st.ExitCode() != 0 {
		t.Fatalf("the drained node: %v, want exited 0", st)
	}

	// Restarted, it joins as a new process; killed, A's gossip loses it.
	b.start()
	b.waitReady()
	poll.Eventually(t, 30*time.Second, "the restarted node alive and not draining", func() bool {
		r := a.nodes()[b.name]
		return r.State == "alive" && !r.Draining
	})
	b.kill9()
	poll.Eventually(t, 30*time.Second, "the killed node dead, as the leader recorded it", func() bool {
		r := a.nodes()[b.name]
		return r.Gossip == "dead" && r.State == "dead" && r.Recorded == "dead"
	})
}
