package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// streamTime is the time a record is indexed under (x/): the stream time
// of the message that carried it, as stored with the message. Ledger-local
// records take the time of the message they were made for, which Append
// gives them as their own time (a Gap has no stored message of its own); a
// record whose message was stored without a time, or not stored at all (no
// bytes, no id: never from a follower), falls back to its own time, which
// is all a rebuild could know.
func streamTime(ev event.Event, msgTime time.Time, stored bool) time.Time {
	if local(ev.Type) || !stored || msgTime.IsZero() {
		return ev.Time
	}
	return msgTime
}

// StreamTime is the record's stream time: the timestamp the stream gave the
// message that carried it, the clock events are judged by (Event.Time is
// only what the signer claims). It is the time the ledger indexes the
// record under (SeqAtTime).
func (r Record) StreamTime() time.Time { return streamTime(r.Event, r.MessageTime, true) }

// SeqAtTime returns the first position whose stream time is at or after t,
// in stream-time order, or head+1 when there is none. Stream times grow
// with the stream sequence (one stream leader stamps them), so the records
// from that position on are the ones at or after t.
func (s *Store) SeqAtTime(t time.Time) (uint64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	// Read the head before the index: a record committed in between is
	// found in the index, and a position past the head read is never
	// returned for "none".
	head := s.headNow().seq
	p := []byte(prefixTime)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: timePrefix(t), UpperBound: prefixEnd(p)})
	if err != nil {
		return 0, fmt.Errorf("ledger: seek time %s: %w", t.Format(time.RFC3339Nano), err)
	}
	seq := head + 1
	if it.First() {
		k := it.Key()
		if len(k) != len(p)+16 {
			err = fmt.Errorf("%w: time index key %q", ErrCorrupt, k)
		} else {
			seq = binary.BigEndian.Uint64(k[len(p)+8:])
		}
	}
	if err = errors.Join(err, it.Error(), it.Close()); err != nil {
		return 0, fmt.Errorf("ledger: seek time %s: %w", t.Format(time.RFC3339Nano), err)
	}
	return seq, nil
}

// timeIndexBatch bounds one batch of the time index rebuild.
const timeIndexBatch = 4096

// timeIndexProgress is how often the rebuild reports progress.
const timeIndexProgress = 100_000

// buildTimeIndex writes x/ for every record (format 1 → 2). Rewriting a key
// is harmless, so an interrupted rebuild simply runs again at the next Open;
// the format version moves forward only after it, with Sync.
func (s *Store) buildTimeIndex() error {
	start := time.Now()
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	var n uint64
	for rec, err := range s.Scan(1) {
		if err != nil {
			return fmt.Errorf("ledger: build time index in %s: %w", s.dir, err)
		}
		if err := b.Set(timeKey(rec.StreamTime(), rec.Event.Seq), nil, nil); err != nil {
			return fmt.Errorf("ledger: build time index at %d: %w", rec.Event.Seq, err)
		}
		if n++; b.Count() >= timeIndexBatch {
			if err := pebblelog.SyncCommit(b); err != nil {
				return fmt.Errorf("ledger: build time index at %d: %w", rec.Event.Seq, err)
			}
			b.Close()
			b = s.db.NewBatch()
		}
		if n%timeIndexProgress == 0 {
			s.log.Info("ledger upgrade: indexing records by stream time", "records", n, "elapsed", time.Since(start).Round(time.Millisecond))
		}
	}
	if err := pebblelog.SyncCommit(b); err != nil {
		return fmt.Errorf("ledger: build time index: %w", err)
	}
	if n > 0 {
		s.log.Info("ledger upgrade: records indexed by stream time", "records", n, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return nil
}
