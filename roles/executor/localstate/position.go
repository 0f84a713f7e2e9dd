package localstate

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Keys of the consumer's bookkeeping: single keys under "m/".
var (
	// positionKey holds the stream sequence from which the executor's
	// consumer must deliver again if it is lost (8 bytes, big endian).
	positionKey = []byte("m/position")
	// drainedKey holds the stream sequence of the newest node.drain the
	// executor completed (8 bytes, big endian).
	drainedKey = []byte("m/drained")
)

// SetPosition records, synced, the stream sequence from which the
// executor's consumer must deliver again if it is lost: every message of
// the consumer below it has been acknowledged. A position lower than the
// truth is safe — the messages between are delivered again and recognised
// (the attempts they carry are recorded) — so callers may record it
// lazily; a higher one would lose messages.
func (s *Store) SetPosition(seq uint64) error {
	return s.setUint(positionKey, seq, "consumer position")
}

// Position returns the position SetPosition recorded last; ok is false if
// none was.
func (s *Store) Position() (seq uint64, ok bool, err error) {
	return s.getUint(positionKey)
}

// MarkDrained records, synced, that the node.drain at stream sequence seq
// was completed, so that a delivery of it again — by a consumer recreated
// from an older position — is not honoured a second time.
func (s *Store) MarkDrained(seq uint64) error {
	return s.setUint(drainedKey, seq, "drain completed")
}

// Drained returns the stream sequence of the newest drain MarkDrained
// recorded, 0 if none.
func (s *Store) Drained() (uint64, error) {
	seq, _, err := s.getUint(drainedKey)
	return seq, err
}

func (s *Store) setUint(key []byte, v uint64, what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return ErrClosed
	}
	b := s.mu.db.NewBatch()
	defer b.Close()
	if err := b.Set(key, binary.BigEndian.AppendUint64(nil, v), nil); err != nil {
		return fmt.Errorf("localstate: batch %s %d: %w", what, v, err)
	}
	return s.commitLocked(b, fmt.Sprintf("%s %d", what, v))
}

func (s *Store) getUint(key []byte) (uint64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return 0, false, ErrClosed
	}
	v, closer, err := s.mu.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("localstate: get %s: %w", key, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("localstate: %s holds %d bytes, want 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}
