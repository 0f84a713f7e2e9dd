package outbox

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the outbox (every event emitted
// and not yet acknowledged, as of the call) into dir, which must not
// exist: a Pebble checkpoint, hard-linked where the file system allows.
// Stop the publisher first (Stop) when the copy must hold everything not
// yet in a copy of the stream taken before it.
func (o *Outbox) Checkpoint(dir string) error {
	o.mu.Lock()
	closed := o.mu.closed
	o.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := o.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("outbox: checkpoint into %s: %w", dir, err)
	}
	return nil
}
