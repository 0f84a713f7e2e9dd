package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// snapshotMagic starts every stored snapshot: the snapshot envelope's
// format. A snapshot without it (written by an older version) or whose
// checksum does not match is reported as ErrCorrupt, and its owner folds
// from the start instead.
var snapshotMagic = []byte("AGS1")

// encodeSnapshot frames data taken at ledger position seq:
// magic | seq (8) | sha256(seq || data) (32) | data.
func encodeSnapshot(seq uint64, data []byte) []byte {
	b := make([]byte, 0, len(snapshotMagic)+8+sha256.Size+len(data))
	b = append(b, snapshotMagic...)
	b = binary.BigEndian.AppendUint64(b, seq)
	h := sha256.New()
	h.Write(b[len(snapshotMagic):])
	h.Write(data)
	b = h.Sum(b)
	return append(b, data...)
}

// decodeSnapshot checks and unframes a stored snapshot.
func decodeSnapshot(name string, b []byte) (uint64, []byte, error) {
	head := len(snapshotMagic) + 8
	if len(b) < head+sha256.Size || !bytes.Equal(b[:len(snapshotMagic)], snapshotMagic) {
		return 0, nil, fmt.Errorf("%w: snapshot %q has no valid header (%d bytes)", ErrCorrupt, name, len(b))
	}
	seq := binary.BigEndian.Uint64(b[len(snapshotMagic):])
	data := b[head+sha256.Size:]
	h := sha256.New()
	h.Write(b[len(snapshotMagic):head])
	h.Write(data)
	if !bytes.Equal(h.Sum(nil), b[head:head+sha256.Size]) {
		return 0, nil, fmt.Errorf("%w: snapshot %q at %d fails its checksum", ErrCorrupt, name, seq)
	}
	return seq, data, nil
}

// SaveSnapshot stores data, a role projection named name folded up to ledger
// position seq, committed with Sync and checksummed. A later save of the
// same name replaces it atomically. seq may not be beyond the head. A
// commit that fails (a full disk) returns ErrSync and, like a failed
// Append, makes the store refuse every later write; it still reads.
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
	if err := s.syncSet(snapshotKey(name), encodeSnapshot(seq, data)); err != nil {
		return fmt.Errorf("ledger: save snapshot %q at %d: %w", name, seq, err)
	}
	return nil
}

// LoadSnapshot returns the snapshot saved under name and its position, or an
// error wrapping ErrNotFound, or ErrCorrupt for a snapshot that is damaged
// (or written in an older framing): fold from the start then.
func (s *Store) LoadSnapshot(name string) (seq uint64, data []byte, err error) {
	if err := s.acquire(); err != nil {
		return 0, nil, err
	}
	defer s.release()
	b, err := s.get(snapshotKey(name))
	if err != nil {
		return 0, nil, fmt.Errorf("ledger: load snapshot %q: %w", name, err)
	}
	return decodeSnapshot(name, b)
}
