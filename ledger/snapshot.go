package ledger

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// SaveSnapshot stores data, a role projection named name folded up to ledger
// position seq, committed with Sync. A later save of the same name replaces
// it. seq may not be beyond the head.
func (s *Store) SaveSnapshot(name string, seq uint64, data []byte) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if name == "" {
		return fmt.Errorf("%w: snapshot needs a name", ErrInvalid)
	}
	if h := s.headNow(); seq > h.seq {
		return fmt.Errorf("%w: snapshot %q at %d is beyond the head %d", ErrInvalid, name, seq, h.seq)
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(data)), seq)
	if err := s.db.Set(snapshotKey(name), append(v, data...), pebble.Sync); err != nil {
		return fmt.Errorf("ledger: save snapshot %q at %d: %w", name, seq, err)
	}
	return nil
}

// LoadSnapshot returns the snapshot saved under name and its position, or an
// error wrapping ErrNotFound.
func (s *Store) LoadSnapshot(name string) (seq uint64, data []byte, err error) {
	if err := s.acquire(); err != nil {
		return 0, nil, err
	}
	defer s.release()
	b, err := s.get(snapshotKey(name))
	if err != nil {
		return 0, nil, fmt.Errorf("ledger: load snapshot %q: %w", name, err)
	}
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%w: snapshot %q is %d bytes", ErrCorrupt, name, len(b))
	}
	return binary.BigEndian.Uint64(b), b[8:], nil
}
