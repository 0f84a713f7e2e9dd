package ledger

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// reader is what *pebble.DB and *pebble.Snapshot share.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

var (
	_ reader = (*pebble.DB)(nil)
	_ reader = (*pebble.Snapshot)(nil)
)

// getFrom returns a copy of the value at key, or an error wrapping
// ErrNotFound.
func getFrom(r reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("%w: key %q", ErrNotFound, key)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: get %q: %w", key, err)
	}
	out := append([]byte(nil), v...)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("ledger: get %q: %w", key, err)
	}
	return out, nil
}
