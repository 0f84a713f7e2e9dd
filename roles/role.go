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
	"github.com/agentic-dev/agentic/internal/fold"
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

// Folder receives committed ledger events, in ledger order, from one
// goroutine (fold.Folder: the contract is declared below the ledger, whose
// follower calls it).
type Folder = fold.Folder

// Snapshotter is a Folder whose state can be saved and restored
// (fold.Snapshotter).
type Snapshotter = fold.Snapshotter

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
