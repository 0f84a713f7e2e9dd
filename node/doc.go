// Package node wires one agentd node: trust files, the bus (an embedded
// nats-server or an external cluster), the durable outbox, the ledger and
// its follower, the roles, the query API and the HTTP endpoints. It is a
// library: flags, signals and exit codes belong to cmd/agentd.
//
// Start order, and why:
//
//  1. trust.Bootstrap — the node's identity signs everything it emits.
//  2. bus — embedded server (DATA/nats, sync_interval: always) or external
//     URLs; streams and the leader bucket are ensured idempotently. A
//     ledger node that finds the events stream absent creates it
//     continuing after its ledger's head (reseed.go), so that a deleted
//     stream loses nothing the ledger holds.
//  3. outbox — opened and started first, and drained before anything
//     folds, so that events emitted before a crash are on the stream again
//     before the roles decide anything new.
//  4. ledger + follower — a ledger whose next message the stream no longer
//     holds is first replaced by a verified copy of a peer's (node/bootstrap,
//     before this node's API serves, so it never asks itself); the
//     follower restores every role from the ledger, then follows the
//     stream; roles act only once the ledger is live. After
//     RebuildLedger (agentd --rebuild-ledger) a rebuild that would reach
//     less than the ledger it replaces is refused and that ledger put
//     back (rebuild.go).
//  5. roles, then the API and HTTP endpoints.
//
// Stop runs in reverse: executors drain (running steps may finish until
// the stop context ends, then are killed and reported as interrupted), the
// leader releases its lease, the outbox flushes what it can, and every
// goroutine has ended when Stop returns.
//
// Example:
//
//	cfg := config.Default()
//	n, err := node.New(cfg, logger)
//	if err != nil { return err }
//	if err := n.Start(ctx); err != nil { return err }
//	defer n.Stop(context.Background())
package node
