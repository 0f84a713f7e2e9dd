package core

import (
	"sort"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	gossip "github.com/agentic-dev/agentic/internal/member"
)

// DefaultMembershipGrace is how long after this node's membership started
// a node the ledger holds alive, but that the membership does not know at
// all, is left alone before it is recorded failed: long enough for a new
// member to learn the cluster by gossip.
const DefaultMembershipGrace = 10 * time.Second

// MemberView is the gossip membership as one node sees it, which
// ReconcileMembers compares with the membership the ledger holds.
type MemberView struct {
	// Members is every member the node knows, itself included, dead and
	// departed ones for a while.
	Members []gossip.Member
	// AbsentAfter is when a node that Members does not hold at all counts
	// as gone: the membership's start plus a grace period
	// (DefaultMembershipGrace). Before it, an absent node is left alone.
	AbsentAfter time.Time
}

// ReconcileMembers returns the membership decisions a leader of epoch
// should emit now to make the ledger's record of each node (State.Nodes)
// say what view says, and the time at which it should run again even if
// nothing changes (zero if none). Like Decide it is pure: the same state,
// view, now, epoch and keys in flight give byte-identical decisions.
//
// Per node, in node id order, one decision at most, and none for a node
// with a membership decision in flight (the next one is made from the
// record that one leaves):
//
//   - alive in view, and the record is absent, of another incarnation or
//     not alive → node.joined with the member's metadata (a suspect or
//     failed node seen alive again, a restart).
//   - suspect in view, and the record is not that incarnation suspect →
//     node.suspect.
//   - dead (left) in view, and the record holds the node alive or suspect
//     → node.failed (node.left) of the record's incarnation; else, if an
//     executor of the member's incarnation is still taking work (it
//     announced itself before the membership saw it go) → node.failed
//     (node.left) of that incarnation.
//   - absent from view, the record alive or suspect, and now at or after
//     view.AbsentAfter → node.failed of the record's incarnation.
//
// Each key names the record's next change (Node.Changes), so that no two
// decisions about a node are alike.
func ReconcileMembers(s *State, view MemberView, now time.Time, epoch uint64, inflight map[DecisionKey]bool) ([]Decision, time.Time) {
	if epoch < s.Epoch {
		return nil, time.Time{}
	}
	d := &decider{s: s, now: now, epoch: epoch, inflight: inflight}
	busy := map[string]bool{}
	for k, on := range inflight {
		if on && k.isNode() {
			busy[k.Node] = true
		}
	}
	members := make(map[string]gossip.Member, len(view.Members))
	ids := make([]string, 0, len(view.Members)+len(s.Nodes))
	for _, m := range view.Members {
		if m.Node == "" {
			continue
		}
		if _, dup := members[m.Node]; !dup {
			ids = append(ids, m.Node)
		}
		members[m.Node] = m
	}
	for id := range s.Nodes {
		if _, ok := members[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if busy[id] {
			continue
		}
		m, known := members[id]
		d.member(id, s.Nodes[id], m, known, view.AbsentAfter)
	}
	return d.out, d.wake
}

// member decides about one node: rec is the ledger's record (nil if none),
// m the member (known false if the view does not hold it).
func (d *decider) member(id string, rec *Node, m gossip.Member, known bool, absentAfter time.Time) {
	up := rec != nil && (rec.State == NodeAlive || rec.State == NodeSuspect)
	switch {
	case !known:
		if !up {
			return
		}
		if d.now.Before(absentAfter) {
			d.wakeAt(absentAfter)
			return
		}
		d.node(KindNodeFailed, event.NodeFailed, rec, recordData(id, rec, "not in the membership view"))
	case m.State == gossip.Alive:
		if rec == nil || rec.Incarnation != m.Incarnation || rec.State != NodeAlive {
			d.node(KindNodeJoined, event.NodeJoined, rec, memberData(m, ""))
		}
	case m.State == gossip.Suspect:
		if rec == nil || rec.Incarnation != m.Incarnation || rec.State != NodeSuspect {
			d.node(KindNodeSuspect, event.NodeSuspect, rec, memberData(m, "suspected by the membership"))
		}
	case m.State == gossip.Dead || m.State == gossip.Left:
		kind, typ, reason := KindNodeFailed, event.NodeFailed, "declared dead by the membership"
		if m.State == gossip.Left {
			kind, typ, reason = KindNodeLeft, event.NodeLeft, "left the cluster"
		}
		switch ex := d.s.Executors[id]; {
		case up:
			d.node(kind, typ, rec, recordData(id, rec, reason))
		case ex != nil && ex.Gone == "" && ex.Incarnation == m.Incarnation:
			d.node(kind, typ, rec, memberData(m, reason))
		}
	}
}

// node emits one membership decision about the node rec records (nil: none
// yet), whose next change it names.
func (d *decider) node(kind DecisionKind, typ event.Type, rec *Node, data event.NodeData) {
	changes := 0
	if rec != nil {
		changes = rec.Changes
	}
	data.Epoch = d.epoch
	d.emit(nodeKey(kind, data.Node, data.Incarnation, changes), typ, "", "", data)
}

// memberData describes a member as its gossip metadata announces it.
func memberData(m gossip.Member, reason string) event.NodeData {
	return event.NodeData{Node: m.Node, Incarnation: m.Incarnation, Roles: m.Roles, Capabilities: m.Capabilities,
		Slots: m.Slots, Version: m.Version, Addr: m.Addr, Reason: reason}
}

// recordData describes a node as the ledger records it.
func recordData(id string, rec *Node, reason string) event.NodeData {
	return event.NodeData{Node: id, Incarnation: rec.Incarnation, Roles: rec.Roles, Capabilities: rec.Capabilities,
		Slots: rec.Slots, Version: rec.Version, Addr: rec.Addr, Reason: reason}
}
