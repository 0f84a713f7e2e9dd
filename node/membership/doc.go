// Package membership runs agentd's gossip membership (hashicorp/memberlist):
// which nodes are reachable, with the metadata each announces (roles,
// capabilities, slots, version, incarnation). It detects failed nodes
// quickly with a tuned failure-detection preset.
//
// Membership grants nothing: it says who answers, never who may do what
// (authority comes only from credentials). The leader orchestrator turns
// what it reports into ledger events (node.joined, node.suspect,
// node.failed, node.left) so that decisions taken on it replay.
//
// Invariants:
//
//  1. Members is this node's view, itself included, in name order. A dead
//     or left member stays in it for Config.Retention after it went (so a
//     leader, even a new one, can record it), and at most MaxGone of them
//     are kept: the table is bounded by the live cluster plus MaxGone.
//  2. Changed is level-triggered: a channel of capacity 1 that receives,
//     without ever blocking the sender, after any change of Members. A
//     reader drains it, then reads Members.
//  3. memberlist's callbacks (delegates, its logger) run under its
//     internal lock or on its probe goroutine: they copy what they are
//     given, take only this package's own mutex, and never call back into
//     memberlist. Nothing here calls memberlist while holding that mutex.
//  4. A clean leave and a failure look the same to memberlist's delegates
//     (it fills no state in the nodes it reports). Leave first announces
//     Meta.Leaving (memberlist UpdateNode, which waits for the broadcast),
//     then leaves: the others record Left when the member they lose had
//     announced it, Dead otherwise.
//  5. Suspect is this node's own verdict: memberlist reports no suspicion
//     to delegates, so a member becomes Suspect when this node's probe of
//     it failed (direct, indirect and TCP; memberlist logs it and starts
//     its suspicion timer), and Alive again when it answers this node's
//     next probe (memberlist's ping delegate), rejoins or updates its
//     metadata. Suspicions other members raise and gossip are not seen
//     here: such a member goes from Alive to Dead.
//
// Usage (the node wires this):
//
//	m, err := membership.Start(ctx, membership.Config{
//		Meta:   membership.Meta{Node: "node-b", Incarnation: inc, Roles: roles},
//		Bind:   "10.0.0.2:7946",
//		Join:   []string{"10.0.0.1:7946"},
//		Preset: membership.PresetFast,
//	})
//	...
//	for range m.Changed() {
//		members := m.Members()
//		...
//	}
//	...
//	m.Leave(ctx) // a clean stop; skip it and the others see Dead
//	m.Stop()
package membership
