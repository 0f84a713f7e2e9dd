// Package nodes is the nodes read model of a ledger node: what the ledger
// records about each agentd node — the membership changes the leader
// recorded (node.joined, node.suspect, node.failed, node.left), operators'
// node.drain requests, and what each executor announced (executor.online:
// slots, queue, capabilities, version, incarnation) — and how it is
// merged with this node's live gossip view for nodes.list (agentctl node
// ls).
//
// Invariants:
//
//  1. The fold is a roles.Snapshotter: one goroutine folds and
//     snapshots; readers (List) read an immutable view published after
//     each batch (Settled), never the fold's state.
//  2. Membership events are leader decisions: one made by an epoch older
//     than the newest leader.elected folded is void (event.Decision
//     FencedBy), as in every fold.
//  3. The model is bounded by the node count: one entry per node name,
//     names only from verified events, at most MaxNodes entries (the
//     longest-unchanged dead or left node goes first).
//  4. A node's recorded state is dead only after a node.failed event;
//     the live view can make a node suspect sooner, never dead (Merge).
//
// Usage (the node wires this):
//
//	n := nodes.New(logger)
//	// add n to the follower's folders
//	rows := nodes.Merge(nodes.MergeInput{Recorded: n.List(), Live: gossip.Members(), …})
package nodes
