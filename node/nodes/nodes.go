package nodes

import (
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
)

// MaxNodes bounds the nodes the model keeps.
const MaxNodes = 10_000

// Recorded states: what the ledger says of a node (State of a Node).
const (
	StateAlive   = "alive"
	StateSuspect = "suspect"
	StateDead    = "dead"
	StateLeft    = "left"
)

// Node is what the ledger records about one node.
type Node struct {
	// Name is the node id (its credential subject).
	Name string `json:"name"`
	// Roles, from its last node.joined (executor when only its
	// executor.online is known).
	Roles []string `json:"roles,omitempty"`
	// Capabilities, Slots and Queue of its executor, from executor.online
	// or node.joined, whichever came last.
	Capabilities []string `json:"capabilities,omitempty"`
	Slots        int      `json:"slots,omitempty"`
	Queue        int      `json:"queue,omitempty"`
	// Version is its agentd build.
	Version string `json:"version,omitempty"`
	// Incarnation identifies its process, as last recorded.
	Incarnation string `json:"incarnation,omitempty"`
	// Addr is its gossip address.
	Addr string `json:"addr,omitempty"`
	// State is the membership state the leader recorded (alive, suspect,
	// dead, left); empty when none was (no gossip in the cluster).
	State string `json:"state,omitempty"`
	// Since is when the leader recorded State (the event's time).
	Since time.Time `json:"since,omitzero"`
	// Reason is the recorded event's reason, for people.
	Reason string `json:"reason,omitempty"`
	// Draining is set by a node.drain for the process recorded when it
	// came (a later process, by its incarnation, clears it).
	Draining    bool      `json:"draining,omitempty"`
	DrainReason string    `json:"drain_reason,omitempty"`
	DrainBy     string    `json:"drain_by,omitempty"`
	DrainAt     time.Time `json:"drain_at,omitzero"`
	// ExecutorOnline is when its executor last announced itself.
	ExecutorOnline time.Time `json:"executor_online,omitzero"`
	// Alarms are the alarms in force on it, by code (never modified in
	// place: a change makes a new slice).
	Alarms []Alarm `json:"alarms,omitempty"`

	drainInc string // the incarnation a drain applies to
	changed  uint64 // ledger seq of the last change (eviction order)
}

// Nodes is the fold. Fold, Settled, Snapshot and Restore are called from
// the follower's goroutine; List from any.
type Nodes struct {
	log    *slog.Logger
	folded uint64
	epoch  uint64
	nodes  map[string]*Node
	dirty  bool
	view   atomic.Pointer[[]Node]
}

var _ roles.Snapshotter = (*Nodes)(nil)

// New returns an empty model.
func New(logger *slog.Logger) *Nodes {
	if logger == nil {
		logger = slog.Default()
	}
	n := &Nodes{log: logger, nodes: map[string]*Node{}}
	n.view.Store(&[]Node{})
	return n
}

// List returns the nodes as of the last batch folded, in name order. The
// slice is shared: do not modify it.
func (n *Nodes) List() []Node { return *n.view.Load() }

// Settled publishes what the batch changed.
func (n *Nodes) Settled(live bool) {
	if !n.dirty {
		return
	}
	n.dirty = false
	out := make([]Node, 0, len(n.nodes))
	for _, nd := range n.nodes {
		c := *nd
		c.Roles, c.Capabilities = slices.Clone(nd.Roles), slices.Clone(nd.Capabilities)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	n.view.Store(&out)
}

// Fold takes one committed event.
func (n *Nodes) Fold(ev event.Event) {
	n.folded = ev.Seq
	switch ev.Type {
	case event.LeaderElected:
		var d event.LeaderElectedData
		if n.decode(ev, &d) && d.Epoch > n.epoch {
			n.epoch = d.Epoch
		}
	case event.NodeJoined, event.NodeSuspect, event.NodeFailed, event.NodeLeft:
		var d event.NodeData
		if !n.decode(ev, &d) || d.Node == "" || d.FencedBy(n.epoch) {
			return
		}
		n.membership(ev, d)
	case event.NodeDrain:
		var d event.NodeDrainData
		if !n.decode(ev, &d) || d.Node == "" {
			return
		}
		nd := n.node(d.Node, ev.Seq)
		nd.Draining, nd.DrainReason, nd.DrainBy, nd.DrainAt, nd.drainInc = true, d.Reason, ev.Node, ev.Time, nd.Incarnation
	case event.AlarmRaised, event.AlarmCleared:
		n.alarm(ev)
	case event.ExecutorOnline:
		var d event.ExecutorOnlineData
		if !n.decode(ev, &d) || ev.Node == "" {
			return
		}
		nd := n.node(ev.Node, ev.Seq)
		n.incarnation(nd, d.Incarnation)
		nd.Slots, nd.Queue, nd.Capabilities, nd.ExecutorOnline = d.Slots, d.Queue, slices.Clone(d.Capabilities), ev.Time
		if d.Version != "" {
			nd.Version = d.Version
		}
		if !slices.Contains(nd.Roles, event.RoleExecutor) {
			nd.Roles = append(nd.Roles, event.RoleExecutor)
		}
	}
}

var states = map[event.Type]string{
	event.NodeJoined: StateAlive, event.NodeSuspect: StateSuspect,
	event.NodeFailed: StateDead, event.NodeLeft: StateLeft,
}

// membership applies a node.joined, node.suspect, node.failed or
// node.left.
func (n *Nodes) membership(ev event.Event, d event.NodeData) {
	nd := n.node(d.Node, ev.Seq)
	n.incarnation(nd, d.Incarnation)
	nd.State, nd.Since, nd.Reason = states[ev.Type], ev.Time, d.Reason
	if d.Roles != nil {
		nd.Roles = slices.Clone(d.Roles)
	}
	if ev.Type == event.NodeJoined {
		nd.Capabilities, nd.Slots = slices.Clone(d.Capabilities), d.Slots
	}
	if d.Version != "" {
		nd.Version = d.Version
	}
	if d.Addr != "" {
		nd.Addr = d.Addr
	}
}

// incarnation records the process a node runs; a new one ends a drain of
// the old one.
func (n *Nodes) incarnation(nd *Node, inc string) {
	if inc == "" || inc == nd.Incarnation {
		return
	}
	nd.Incarnation = inc
	if nd.Draining && nd.drainInc != "" {
		nd.Draining, nd.DrainReason, nd.DrainBy, nd.DrainAt, nd.drainInc = false, "", "", time.Time{}, ""
	}
}

// node returns the entry of name, made if need be (evicting one when the
// model is full), marked changed at seq.
func (n *Nodes) node(name string, seq uint64) *Node {
	n.dirty = true
	nd, ok := n.nodes[name]
	if !ok {
		if len(n.nodes) >= MaxNodes {
			n.evict()
		}
		nd = &Node{Name: name}
		n.nodes[name] = nd
	}
	nd.changed = seq
	return nd
}

// evict drops the longest-unchanged dead or left node, else the
// longest-unchanged node.
func (n *Nodes) evict() {
	var victim *Node
	for _, nd := range n.nodes {
		gone := nd.State == StateDead || nd.State == StateLeft
		switch {
		case victim == nil:
			victim = nd
		case gone != (victim.State == StateDead || victim.State == StateLeft):
			if gone {
				victim = nd
			}
		case nd.changed < victim.changed:
			victim = nd
		}
	}
	if victim != nil {
		n.log.Warn("nodes: model full; forgetting a node", "node", victim.Name, "state", victim.State, "max", MaxNodes)
		delete(n.nodes, victim.Name)
	}
}

func (n *Nodes) decode(ev event.Event, v any) bool {
	if err := ev.Decode(v); err != nil {
		n.log.Warn("nodes: event ignored: payload does not decode", "event", ev.ID, "seq", ev.Seq, "type", ev.Type, "err", err)
		return false
	}
	return true
}
