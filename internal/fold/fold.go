// Package fold is the contract between the ledger's follower
// (ledger/follow) and what it hands committed events to: the node's roles.
// It is declared here, below the ledger, so that the follower need not
// import the roles it serves; package roles names the same interfaces.
package fold

import "github.com/agentic-dev/agentic/bus/event"

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
