package ledger

import "errors"

// Errors callers test for with errors.Is.
var (
	// ErrNotFound is returned for a record or snapshot that does not exist.
	ErrNotFound = errors.New("ledger: not found")
	// ErrSync marks a commit that may not be durable. The caller must stop
	// the node: never retry silently, never acknowledge the messages.
	ErrSync = errors.New("ledger: commit not durable")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("ledger: closed")
	// ErrFormat is returned by Open for a store written by a newer version,
	// or left half-imported.
	ErrFormat = errors.New("ledger: unsupported format")
	// ErrNotEmpty is returned by Import when the target store has records.
	ErrNotEmpty = errors.New("ledger: store not empty")
	// ErrCorrupt marks stored data that cannot be decoded or does not chain.
	ErrCorrupt = errors.New("ledger: corrupt")
	// ErrInvalid marks a bad argument (a zero stream seq, an empty name).
	ErrInvalid = errors.New("ledger: invalid argument")
)
