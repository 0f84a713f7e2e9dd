package node_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/membership"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// gossipConfig is a single node with gossip on a free loopback port,
// encrypted with a key file.
func gossipConfig(t *testing.T, dir string) config.Config {
	cfg := nodetest.Config(dir)
	cfg.GossipListen = "127.0.0.1:0"
	cfg.GossipKeyFile = filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(cfg.GossipKeyFile, []byte("c2l4dGVlbi1ieXRlLWtleQ==\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Executor.Capabilities = []string{"docker"}
	return cfg
}

func peerOf(t *testing.T, n *nodetest.Node, name string) *membership.Membership {
	t.Helper()
	key, err := config.ReadGossipKey(n.Config().GossipKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := membership.Start(context.Background(), membership.Config{
		Meta:   membership.Meta{Node: name, Incarnation: name + "-1", Roles: []string{event.RoleExecutor}, Slots: 3, Version: "peer-v"},
		Bind:   "127.0.0.1:0",
		Join:   []string{n.Membership().Addr()},
		Key:    key,
		Preset: membership.PresetFast,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

func nodesByName(t *testing.T, n *nodetest.Node) (map[string]api.NodeSummary, *api.NodesPage[api.NodeSummary]) {
	t.Helper()
	p, err := n.API.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]api.NodeSummary{}
	for _, s := range p.Items {
		out[s.Name] = s
	}
	return out, p
}

// A node with gossip_listen runs membership: node.info shows it, nodes.list
// merges the live view with the ledger, and a clean stop is a leave.
func TestGossipMembershipIsWired(t *testing.T) {
	n := nodetest.Start(t, gossipConfig(t, t.TempDir()))
	g := n.Membership()
	if g == nil {
		t.Fatal("no membership with gossip_listen set")
	}
	if meta := g.Meta(); meta.Node != "test-node" || meta.Slots != 8 || !slices.Equal(meta.Capabilities, []string{"docker"}) ||
		meta.Version != node.Version || meta.Incarnation == "" || len(meta.Roles) != len(event.NodeRoles) {
		t.Errorf("announced meta %+v", meta)
	}
	peer := peerOf(t, n, "peer-x")
	poll.Eventually(t, 20*time.Second, "node.info to count two members", func() bool {
		var info api.NodeInfo
		err := n.API.Call(context.Background(), api.MethodNodeInfo, struct{}{}, &info)
		return err == nil && info.Members == 2 && info.Gossip == g.Addr() && info.GossipJoinError == ""
	})

	var rows map[string]api.NodeSummary
	var page *api.NodesPage[api.NodeSummary]
	poll.Eventually(t, 30*time.Second, "nodes.list to show both nodes, the leader and the executor's slots", func() bool {
		rows, page = nodesByName(t, n)
		self, peerRow := rows["test-node"], rows["peer-x"]
		return page.Leader == "test-node" && page.Epoch > 0 && self.Leader && self.Slots == 8 && self.ClockSkew != nil &&
			peerRow.State == "alive" && peerRow.Gossip == "alive"
	})
	self, peerRow := rows["test-node"], rows["peer-x"]
	if self.State != "alive" || self.Gossip != "alive" || self.Version != node.Version || !slices.Equal(self.Capabilities, []string{"docker"}) ||
		self.SlotsUsed == nil || *self.SlotsUsed != 0 {
		t.Errorf("self row %+v", self)
	}
	if peerRow.Slots != 3 || peerRow.Version != "peer-v" || peerRow.Addr != peer.Addr() || peerRow.Leader || peerRow.ClockSkew != nil {
		t.Errorf("peer row %+v", peerRow)
	}
	if page.Node != "test-node" || page.Gossip != g.Addr() {
		t.Errorf("page from %q gossip %q", page.Node, page.Gossip)
	}

	// The peer crashes: gossip sees it dead, the leader records
	// node.failed, and nodes.list shows it dead.
	peer.Stop()
	poll.Eventually(t, 20*time.Second, "nodes.list to show the peer dead, as recorded", func() bool {
		rows, _ = nodesByName(t, n)
		r := rows["peer-x"]
		return r.Gossip == "dead" && r.State == "dead" && r.Recorded == "dead"
	})

	// A clean stop of the node is a leave for the others.
	watcher := peerOf(t, n, "watcher")
	poll.Eventually(t, 20*time.Second, "the watcher to see the node", func() bool { return state(watcher, "test-node") == membership.Alive })
	n.Stop(t)
	poll.Eventually(t, 20*time.Second, "the watcher to see the node left", func() bool { return state(watcher, "test-node") == membership.Left })
}

func state(m *membership.Membership, name string) membership.State {
	for _, mem := range m.Members() {
		if mem.Node == name {
			return mem.State
		}
	}
	return ""
}

// Without gossip, nodes.list shows the nodes the ledger knows and the
// answering node alive.
func TestNodesListWithoutGossip(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	if n.Membership() != nil {
		t.Fatal("membership without gossip_listen")
	}
	poll.Eventually(t, 30*time.Second, "the node listed alive with its executor's slots", func() bool {
		rows, page := nodesByName(t, n)
		r := rows["test-node"]
		return len(rows) == 1 && r.State == "alive" && r.Gossip == "" && r.Recorded == "" && r.Slots == 8 && r.Leader && page.Gossip == ""
	})
	var info api.NodeInfo
	if err := n.API.Call(context.Background(), api.MethodNodeInfo, struct{}{}, &info); err != nil || info.Gossip != "" || info.Members != 0 {
		t.Errorf("node.info %+v %v", info, err)
	}
	// A bad request is refused with a hint.
	_, err := n.API.NodesList(context.Background(), api.NodesListRequest{Limit: -1})
	var re *api.RemoteError
	if !errors.As(err, &re) || re.Code != api.CodeBadRequest || re.Hint == "" {
		t.Errorf("limit -1: %v", err)
	}
}

// A gossip key file that is not a key stops the node before it starts,
// naming the setting.
func TestBadGossipKeyFileIsRefused(t *testing.T) {
	cfg := gossipConfig(t, t.TempDir())
	if err := os.WriteFile(cfg.GossipKeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := node.New(cfg, nil)
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "gossip_key_file") || !strings.Contains(err.Error(), "not base64") {
		t.Fatalf("New = %v", err)
	}
}

// A node.drain for the node makes it announce draining in gossip; once
// its executor is drained the node is stopped (agentd does so) and the
// others see it left. One for another node changes nothing here.
func TestDrainedNodeAnnouncesItAndLeaves(t *testing.T) {
	n := nodetest.Start(t, gossipConfig(t, t.TempDir()))
	watcher := peerOf(t, n, "watcher")
	poll.Eventually(t, 20*time.Second, "the watcher to see the node", func() bool { return state(watcher, "test-node") == membership.Alive })
	publish := func(node string) {
		d := event.MustDraft(event.NodeDrain, "", event.NodeDrainData{Node: node, Reason: "test"})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
			t.Fatal(err)
		}
	}
	publish("another-node")
	// The node's ledger folds the drain for another node; its executor,
	// on its own consumer, has most likely read it by then too (this
	// check cannot prove it did), and did nothing.
	poll.Eventually(t, 20*time.Second, "the other node's drain in nodes.list", func() bool {
		rows, _ := nodesByName(t, n)
		return rows["another-node"].Draining
	})
	if n.Membership().Meta().Draining || state(watcher, "test-node") != membership.Alive {
		t.Fatal("a drain for another node drained this one")
	}
	publish("test-node")
	poll.Eventually(t, 20*time.Second, "the watcher to see the node draining", func() bool {
		for _, m := range watcher.Members() {
			if m.Node == "test-node" {
				return m.Draining && m.State == membership.Alive
			}
		}
		return false
	})
	select {
	case <-n.Drained():
	case <-time.After(20 * time.Second):
		t.Fatal("the executor did not drain")
	}
	n.Stop(t)
	poll.Eventually(t, 20*time.Second, "the watcher to see the node left", func() bool { return state(watcher, "test-node") == membership.Left })
}
