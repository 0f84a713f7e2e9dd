package node

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/membership"
)

// leaveTimeout bounds the leave broadcasts at Stop.
const leaveTimeout = 3 * time.Second

// startGossip joins the gossip group when gossip_listen is set. It runs
// after the bus is up and before the roles, which read it (the
// orchestrator records membership from it).
func (n *Node) startGossip(ctx context.Context) error {
	if n.cfg.GossipListen == "" {
		return nil
	}
	var key []byte
	if n.cfg.GossipKeyFile != "" {
		var err error
		if key, err = config.ReadGossipKey(n.cfg.GossipKeyFile); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		// A secret the node knows: never in an event or step output.
		redact.Remember("gossip_key", base64.StdEncoding.EncodeToString(key))
	}
	g, err := membership.Start(ctx, membership.Config{
		Meta:      n.gossipMeta(),
		Bind:      n.cfg.GossipListen,
		Advertise: n.cfg.GossipAdvertise,
		Join:      n.cfg.Join,
		Key:       key,
		Label:     n.cfg.GossipLabel,
		Preset:    n.cfg.GossipPreset,
		Logger:    n.log,
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.gossip = g
	return nil
}

// gossipMeta is what the node announces: its name and process, roles,
// version, and its executor's capabilities and slots.
func (n *Node) gossipMeta() membership.Meta {
	m := membership.Meta{Node: n.cfg.Name, Incarnation: n.incarnation, Roles: n.cfg.Roles, Version: Version}
	if n.has(event.RoleExecutor) {
		m.Capabilities, m.Slots = n.cfg.Executor.Capabilities, n.cfg.Executor.Slots
	}
	return m
}

// stopGossip leaves the gossip group, so that the others record a leave
// rather than a failure, and stops gossip. It runs once the roles have
// stopped and the outbox is drained: until then the node is a member
// that finishes its work.
func (n *Node) stopGossip(ctx context.Context) {
	if n.gossip == nil {
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	if err := n.gossip.Leave(lctx); err != nil {
		n.log.Warn("gossip leave; the others may record a failure", "err", err)
	}
	cancel()
	n.gossip.Stop()
	n.gossip = nil
}

// Membership is the node's gossip membership; nil when it runs none.
func (n *Node) Membership() *membership.Membership { return n.gossip }
