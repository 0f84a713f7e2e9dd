// Package roles holds what every role shares: the contract between a role
// and the node that hosts it. The node owns the bus, the outbox and the
// ledger; a role sees committed ledger events (Folder) and emits drafts
// through an Emitter. Roles never touch NATS or Pebble event storage
// directly, which keeps their logic testable with real parts wired by the
// node and replayable without side effects.
package roles

import (
	"context"
	"log/slog"

	"github.com/agentic-dev/agentic/bus/event"
)

// Emitter durably queues events for publishing. When Emit returns nil the
// drafts are synced to the node's outbox and will reach the bus, across
// restarts if need be.
type Emitter interface {
	Emit(ctx context.Context, drafts ...event.Draft) error
}

// EmitterFunc adapts a function to Emitter.
type EmitterFunc func(ctx context.Context, drafts ...event.Draft) error

// Emit calls f.
func (f EmitterFunc) Emit(ctx context.Context, drafts ...event.Draft) error { return f(ctx, drafts...) }

// Folder receives committed ledger events. The node calls Fold once per
// event, in ledger order, from a single goroutine: first for the events
// already in the ledger when the node starts (restore), then for each new
// commit. Fold must be fast and must not block on I/O; hand work to the
// role's own goroutine.
type Folder interface {
	Fold(ev event.Event)
	// Settled is called after each batch of folds. live is false while the
	// node restores or catches up with the stream head it saw at start, and
	// true from then on: a role acts (decides, plans) only when live.
	Settled(live bool)
}

// Env is what the node gives a role.
type Env struct {
	// Node is this node's id.
	Node string
	// Logger is the role's logger (already tagged with role and node).
	Logger *slog.Logger
	// Emit queues events for the bus.
	Emit Emitter
}

// Role is a long-running part of a node. Constructors start nothing; Start
// begins the role's goroutines and returns; Stop ends them all and waits.
// Both are idempotent.
type Role interface {
	Name() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Snapshotter is a Folder whose state can be saved and restored, so that a
// restarting node folds only the events after the snapshot. The follower
// calls Snapshot and Restore from the goroutine that calls Fold.
type Snapshotter interface {
	Folder
	// SnapshotName names the snapshot in the ledger (one per folder kind).
	SnapshotName() string
	// Snapshot returns the state and the ledger position it reflects.
	Snapshot() (seq uint64, data []byte, err error)
	// Restore replaces the state with a snapshot; on error the state is
	// left as it was.
	Restore(data []byte) error
}
