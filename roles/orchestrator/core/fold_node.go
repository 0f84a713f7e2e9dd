package core

import (
	"fmt"
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
)

// The membership events the leader records (reconcile.go) and the
// operator's node.drain. A node event describes the node's state as a
// fact: folding it sets the node's record (Nodes) to that state and
// incarnation, and a copy of the fact the record already holds is ignored.
// What the executor of a failed or departed node held is given up by
// Decide (task.cancel, code superseded), not here: the fold of that cancel
// decides between a new attempt and needs-decision.

func foldNodeJoined(s *State, ev event.Event)  { s.foldNode(ev, NodeAlive) }
func foldNodeSuspect(s *State, ev event.Event) { s.foldNode(ev, NodeSuspect) }
func foldNodeFailed(s *State, ev event.Event)  { s.foldNode(ev, NodeFailed) }
func foldNodeLeft(s *State, ev event.Event)    { s.foldNode(ev, NodeLeft) }

// foldNode records node event ev, which puts its node in state to:
//
//   - alive (node.joined): an executor of that incarnation is back in the
//     scheduling set (a node stopped and continued comes back without a
//     new executor.online); a node running the executor role whose
//     incarnation has no live executor record gets one, with the slots and
//     capabilities its gossip metadata announced (queue 0 until its
//     executor.online says otherwise).
//   - suspect: its executor takes no new work, and keeps what it holds.
//   - failed, left: its executor of that incarnation is gone.
func (s *State) foldNode(ev event.Event, to NodeState) {
	var d event.NodeData
	if !s.decode(ev, &d) || s.fenced(d.Epoch) {
		return
	}
	n := s.Nodes[d.Node]
	if d.Node == "" || (n != nil && n.Incarnation == d.Incarnation && n.State == to) {
		s.Ignored++
		return
	}
	if n == nil {
		n = &Node{}
		s.Nodes[d.Node] = n
	}
	*n = Node{Incarnation: d.Incarnation, State: to, Since: ev.Time, Roles: d.Roles, Capabilities: d.Capabilities,
		Slots: d.Slots, Version: d.Version, Addr: d.Addr, Reason: d.Reason, Changes: n.Changes + 1}
	ex := s.Executors[d.Node]
	switch to {
	case NodeAlive:
		switch {
		case ex != nil && ex.Incarnation == d.Incarnation:
			if ex.Gone != "" && ex.Gone != NodeRevoked {
				ex.Gone, ex.Since = "", ev.Time
			}
		case (ex == nil || (ex.Gone != "" && ex.Gone != NodeRevoked)) && slices.Contains(d.Roles, event.RoleExecutor):
			s.Executors[d.Node] = &Executor{Slots: d.Slots, Capabilities: d.Capabilities, Version: d.Version,
				Incarnation: d.Incarnation, Since: ev.Time}
		}
	case NodeFailed, NodeLeft:
		if ex != nil && ex.Incarnation == d.Incarnation {
			ex.Gone = to
			s.loseWorktrees(d.Node, fmt.Sprintf("node %s, which holds the run's git worktree, %s", d.Node, to)) // git.go
		}
	}
	s.executorsChanged(d.Node)
}

// foldNodeDrain records an operator's request that a node take no new work
// and finish what it runs. Decide gives up the assignments it could not
// have started. A node without an executor, or one already draining, is
// ignored.
func foldNodeDrain(s *State, ev event.Event) {
	var d event.NodeDrainData
	if !s.decode(ev, &d) {
		return
	}
	ex := s.Executors[d.Node]
	if ex == nil || ex.Draining {
		s.Ignored++
		return
	}
	ex.Draining = true
	s.executorsChanged(d.Node)
}
