package localstate

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the committed attempt records
// into dir, which must not exist: a Pebble checkpoint, hard-linked where
// the file system allows.
func (s *Store) Checkpoint(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return ErrClosed
	}
	if err := s.mu.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("localstate: checkpoint into %s: %w", dir, err)
	}
	return nil
}
