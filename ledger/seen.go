package ledger

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// seenSet answers "was this id seen?" for one Append. Nearly every lookup
// misses, so it reads through one iterator with bloom filters on every level,
// L6 included (DB.Get skips L6 filters, and a miss there reads and
// decompresses a data block). The iterator sees the state committed before
// the Append; ids staged by the Append itself are in the map.
type seenSet struct {
	it      *pebble.Iterator
	pending map[string]uint64 // id → stream seq; nil while importing: nothing reads it back
}

// newSeenSet opens the seen-set of an Append that stages about ids ids.
func (s *Store) newSeenSet(ids int) (*seenSet, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound:   []byte(prefixSeen),
		UpperBound:   prefixEnd([]byte(prefixSeen)),
		UseL6Filters: true,
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: open seen-set: %w", err)
	}
	return &seenSet{it: it, pending: make(map[string]uint64, ids)}, nil
}

func (ss *seenSet) close() error {
	if ss == nil || ss.it == nil {
		return nil
	}
	return ss.it.Close()
}

// wasSeen reports whether id is in the seen-set: committed, or staged by
// this batch.
func (a *appender) wasSeen(id string) (bool, error) {
	if _, ok := a.seen.pending[id]; ok {
		return true, nil
	}
	a.scratch.seenKey = append(append(a.scratch.seenKey[:0], prefixSeen...), id...)
	key := a.scratch.seenKey
	if a.seen.it.SeekPrefixGE(key) && bytes.Equal(a.seen.it.Key(), key) {
		return true, nil
	}
	if err := a.seen.it.Error(); err != nil {
		return false, fmt.Errorf("ledger: look up id %s: %w", id, err)
	}
	return false, nil
}

// firstSeq is the stream seq that brought id, if this Append staged it.
func (ss *seenSet) firstSeq(id string) (uint64, bool) {
	if ss == nil {
		return 0, false
	}
	seq, ok := ss.pending[id]
	return seq, ok
}

// markSeen stages id into the seen-set; the value is the stream seq that
// brought it, for forensics.
func (a *appender) markSeen(id string, stream uint64) error {
	if a.seen != nil && a.seen.pending != nil {
		a.seen.pending[id] = stream
	}
	a.scratch.seenKey = append(append(a.scratch.seenKey[:0], prefixSeen...), id...)
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], stream)
	if err := a.b.Set(a.scratch.seenKey, v[:], nil); err != nil {
		return fmt.Errorf("ledger: stage id %s: %w", id, err)
	}
	return nil
}
