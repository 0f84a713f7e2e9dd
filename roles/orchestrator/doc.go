// Package orchestrator is the orchestrator role: it holds the leader lease
// (lease.go, on the NATS key-value bucket), folds the committed events the
// node hands it, and, while it leads, emits the decisions of the pure core
// (package core: State, the fold, Decide and their golden scripts), which
// imports no NATS.
//
// One goroutine owns the core (loop.go): it folds, decides and marshals
// snapshots; Fold, Settled, Restore and the lease hand it inputs through a
// channel, in order. Readers do not touch the core: Load and Leader read
// what the goroutine publishes through an atomic pointer after each batch
// of inputs, and Snapshot and Read are requests the goroutine answers in
// turn. Emitting is the emitter goroutine's, so that a slow outbox holds
// back no fold.
package orchestrator
