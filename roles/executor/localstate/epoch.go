package localstate

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// electionPrefix keys the leader elections the executor has seen:
// "l/" + stream sequence (8 bytes, big endian) → epoch (8 bytes, big
// endian). Only elections that raise the epoch are kept, so the stored
// epochs strictly increase with the sequence.
const electionPrefix = "l/"

func electionKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(electionPrefix), seq)
}

// RaiseEpoch records that a leader.elected of epoch was at stream sequence
// seq, synced before it returns. It reports whether the record changed
// anything: an election no newer than the epoch already in force at seq is
// stale (the ledger ignores it too) and is not stored. Elections recorded
// after seq with an epoch not above epoch are dropped, since epoch now
// covers them.
func (s *Store) RaiseEpoch(seq, epoch uint64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return false, ErrClosed
	}
	cur, err := s.epochAtLocked(seq + 1)
	if err != nil {
		return false, err
	}
	if epoch <= cur {
		return false, nil
	}
	b := s.mu.db.NewBatch()
	defer b.Close()
	v := binary.BigEndian.AppendUint64(nil, epoch)
	if err := b.Set(electionKey(seq), v, nil); err != nil {
		return false, fmt.Errorf("localstate: batch epoch %d at %d: %w", epoch, seq, err)
	}
	it, err := s.mu.db.NewIter(&pebble.IterOptions{LowerBound: electionKey(seq + 1), UpperBound: upperBound(electionPrefix)})
	if err != nil {
		return false, fmt.Errorf("localstate: scan epochs: %w", err)
	}
	for it.First(); it.Valid() && binary.BigEndian.Uint64(it.Value()) <= epoch; it.Next() {
		if err := b.Delete(it.Key(), nil); err != nil {
			it.Close()
			return false, fmt.Errorf("localstate: batch epoch %d at %d: %w", epoch, seq, err)
		}
	}
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("localstate: scan epochs: %w", err)
	}
	err = s.commitLocked(b, fmt.Sprintf("epoch %d at stream seq %d", epoch, seq))
	s.mu.newest = newestElection{} // read again
	if err != nil {
		return false, err
	}
	return true, nil
}

// newestElection is the newest election recorded (the highest sequence,
// so the highest epoch), read once and kept until RaiseEpoch writes:
// the epoch in force at every sequence after it.
type newestElection struct {
	seq, epoch uint64
	known      bool // read, and no election written since
	any        bool // there is one
}

// EpochAt returns the leader epoch in force just before stream sequence
// seq: the highest epoch recorded by RaiseEpoch at a sequence below seq,
// 0 if none. A decision carried at seq whose epoch is lower was made by a
// deposed leader.
func (s *Store) EpochAt(seq uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return 0, ErrClosed
	}
	return s.epochAtLocked(seq)
}

// Epoch returns the highest epoch recorded, 0 if none.
func (s *Store) Epoch() (uint64, error) {
	return s.EpochAt(^uint64(0))
}

// epochAtLocked is EpochAt under the lock. A sequence after the newest
// election — every assignment but those a redelivery brings late — is
// answered from memory.
func (s *Store) epochAtLocked(seq uint64) (uint64, error) {
	n := &s.mu.newest
	if !n.known {
		it, err := s.mu.db.NewIter(&pebble.IterOptions{LowerBound: []byte(electionPrefix), UpperBound: upperBound(electionPrefix)})
		if err != nil {
			return 0, fmt.Errorf("localstate: scan epochs: %w", err)
		}
		*n = newestElection{known: true}
		if it.Last() {
			n.any = true
			n.seq = binary.BigEndian.Uint64(it.Key()[len(electionPrefix):])
			n.epoch = binary.BigEndian.Uint64(it.Value())
		}
		if err := it.Close(); err != nil {
			*n = newestElection{}
			return 0, fmt.Errorf("localstate: scan epochs: %w", err)
		}
	}
	switch {
	case !n.any:
		return 0, nil
	case seq > n.seq:
		return n.epoch, nil
	}
	return s.epochSeek(seq)
}

// epochSeek reads the epoch in force just before seq from Pebble.
func (s *Store) epochSeek(seq uint64) (uint64, error) {
	it, err := s.mu.db.NewIter(&pebble.IterOptions{LowerBound: []byte(electionPrefix), UpperBound: electionKey(seq)})
	if err != nil {
		return 0, fmt.Errorf("localstate: scan epochs: %w", err)
	}
	var epoch uint64
	if it.Last() {
		epoch = binary.BigEndian.Uint64(it.Value())
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("localstate: scan epochs: %w", err)
	}
	return epoch, nil
}
