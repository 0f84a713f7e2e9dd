// Package member is what a node knows of another through gossip — its
// announced meta, its state and since when — as plain values: the
// membership (node/membership) produces them, the leader (roles/orchestrator)
// folds them, and neither depends on the other.
package member

import "time"

// State is where a member is, as this node sees it.
type State string

// Member states.
const (
	// Alive: the member answers probes.
	Alive State = "alive"
	// Suspect: a probe failed; the member may yet refute.
	Suspect State = "suspect"
	// Dead: the member did not refute in time (failure detected).
	Dead State = "dead"
	// Left: the member announced that it leaves.
	Left State = "left"
)

// Meta is what a node announces about itself in gossip.
type Meta struct {
	// Node is the node id (its credential subject), also its gossip name.
	Node string `json:"node"`
	// Incarnation identifies the agentd process: new at every start.
	Incarnation string `json:"inc"`
	// Roles the node runs.
	Roles []string `json:"roles,omitempty"`
	// Capabilities and Slots of its executor, if it runs one.
	Capabilities []string `json:"caps,omitempty"`
	Slots        int      `json:"slots,omitempty"`
	// Version is the agentd build.
	Version string `json:"v,omitempty"`
	// Draining is set once the node was asked to drain.
	Draining bool `json:"drain,omitempty"`
	// Leaving is set by Leave just before the node leaves: it is how
	// the others tell a clean leave from a failure (memberlist reports
	// both the same way).
	Leaving bool `json:"leaving,omitempty"`
}

// Member is one node as this node's membership sees it.
type Member struct {
	Meta
	// Addr is the member's gossip address (host:port).
	Addr string
	// State is alive, suspect, dead or left.
	State State
	// Since is when this node saw the member enter State.
	Since time.Time
}
