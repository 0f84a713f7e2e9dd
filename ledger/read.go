package ledger

import (
	"errors"
	"fmt"
	"iter"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/cockroachdb/pebble/v2"
)

// Get returns the record at seq, or an error wrapping ErrNotFound.
func (s *Store) Get(seq uint64) (Record, error) {
	if err := s.acquire(); err != nil {
		return Record{}, err
	}
	defer s.release()
	var c msgCache
	rec, err := s.readRecord(s.db, seq, &c)
	if err != nil {
		return Record{}, s.wrapRead(fmt.Errorf("ledger: get %d: %w", seq, err))
	}
	return rec, nil
}

// Scan yields every record with Seq >= from, in order, from a snapshot taken
// when the loop starts. It stops at the first error, which it yields.
func (s *Store) Scan(from uint64) iter.Seq2[Record, error] {
	return s.scan(func(snap *pebble.Snapshot, yield func(uint64) bool) error {
		it, err := snap.NewIter(&pebble.IterOptions{
			LowerBound: eventKey(from),
			UpperBound: prefixEnd([]byte(prefixEvent)),
		})
		if err != nil {
			return fmt.Errorf("ledger: scan from %d: %w", from, err)
		}
		return eachSeq(it, []byte(prefixEvent), yield)
	})
}

// ScanRun yields the records of run with Seq >= from, in order.
func (s *Store) ScanRun(run string, from uint64) iter.Seq2[Record, error] {
	return s.scanIndex(runPrefix(run), from)
}

// ScanType yields the records of type t with Seq >= from, in order.
func (s *Store) ScanType(t event.Type, from uint64) iter.Seq2[Record, error] {
	return s.scanIndex(typePrefix(t), from)
}

func (s *Store) scanIndex(p []byte, from uint64) iter.Seq2[Record, error] {
	return s.scan(func(snap *pebble.Snapshot, yield func(uint64) bool) error {
		it, err := snap.NewIter(&pebble.IterOptions{
			LowerBound: indexKey(p, from),
			UpperBound: prefixEnd(p),
		})
		if err != nil {
			return fmt.Errorf("ledger: scan index %q from %d: %w", p, from, err)
		}
		return eachSeq(it, p, yield)
	})
}

// eachSeq yields the seq of every key of it that is exactly p + be64(seq),
// then closes it.
func eachSeq(it *pebble.Iterator, p []byte, yield func(uint64) bool) error {
	for ok := it.First(); ok; ok = it.Next() {
		seq, mine := indexSeq(p, it.Key())
		if mine && !yield(seq) {
			break
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// scan runs walk over a snapshot and turns the seqs it produces into
// records.
func (s *Store) scan(walk func(*pebble.Snapshot, func(uint64) bool) error) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := s.acquire(); err != nil {
			yield(Record{}, err)
			return
		}
		defer s.release()
		snap := s.db.NewSnapshot()
		defer snap.Close()
		var c msgCache
		var failed error
		stopped := false
		err := walk(snap, func(seq uint64) bool {
			rec, err := s.readRecord(snap, seq, &c)
			if err != nil {
				failed = fmt.Errorf("ledger: scan at %d: %w", seq, err)
				return false
			}
			if !yield(rec, nil) {
				stopped = true
				return false
			}
			return true
		})
		if stopped {
			return
		}
		if err = errors.Join(failed, err); err != nil {
			yield(Record{}, s.wrapRead(err))
		}
	}
}

// msgCache keeps the last message read: the records of a batch share it.
type msgCache struct {
	stream uint64
	msg    storedMessage
	found  bool
}

func (s *Store) readRecord(r reader, seq uint64, c *msgCache) (Record, error) {
	b, err := getFrom(r, eventKey(seq))
	if err != nil {
		return Record{}, err
	}
	ev, err := decodeRecord(seq, b)
	if err != nil {
		return Record{}, err
	}
	h, err := getFrom(r, hashKey(seq))
	if err != nil {
		return Record{}, fmt.Errorf("hash of record %d: %w", seq, err)
	}
	if len(h) != 32 {
		return Record{}, fmt.Errorf("%w: hash of record %d is %d bytes", ErrCorrupt, seq, len(h))
	}
	rec := Record{Event: ev}
	copy(rec.Hash[:], h)
	if ev.Type == event.Gap {
		return rec, nil
	}
	m, ok, err := c.get(r, ev.StreamSeq)
	if err != nil || !ok {
		return rec, err
	}
	rec.MessageTime, rec.MessageID = m.Time, m.ID
	if len(m.Raw) > 0 {
		rec.Raw = m.Raw
	}
	return rec, nil
}

// get returns the message stored for stream seq, if any.
func (c *msgCache) get(r reader, stream uint64) (storedMessage, bool, error) {
	if c.stream == stream && stream != 0 {
		return c.msg, c.found, nil
	}
	b, err := getFrom(r, messageKey(stream))
	if errors.Is(err, ErrNotFound) {
		c.stream, c.msg, c.found = stream, storedMessage{}, false
		return storedMessage{}, false, nil
	}
	if err != nil {
		return storedMessage{}, false, err
	}
	m, err := decodeMessage(stream, b)
	if err != nil {
		return storedMessage{}, false, err
	}
	c.stream, c.msg, c.found = stream, m, true
	return m, true, nil
}

// Message returns the signed message stored for stream seq stream, exactly
// as it travelled (the "jws" of the records it carried), or an error
// wrapping ErrNotFound when none is stored there (a Gap, or a message that
// had no bytes).
func (s *Store) Message(stream uint64) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	var c msgCache
	m, ok, err := c.get(s.db, stream)
	switch {
	case err != nil:
		return nil, fmt.Errorf("ledger: message at stream seq %d: %w", stream, err)
	case !ok || len(m.Raw) == 0:
		return nil, fmt.Errorf("%w: no message stored at stream seq %d", ErrNotFound, stream)
	}
	return m.Raw, nil
}

// ScanEvents yields the events with Seq >= from, in order, from a
// snapshot taken when the loop starts: the events alone, read by one
// iterator, without their hashes and messages (Scan's Record has them),
// for a reader that folds many (the improvement loop's window). It stops
// at the first error, which it yields.
func (s *Store) ScanEvents(from uint64) iter.Seq2[event.Event, error] {
	return func(yield func(event.Event, error) bool) {
		if err := s.acquire(); err != nil {
			yield(event.Event{}, err)
			return
		}
		defer s.release()
		snap := s.db.NewSnapshot()
		defer snap.Close()
		p := []byte(prefixEvent)
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: eventKey(from), UpperBound: prefixEnd(p)})
		if err != nil {
			yield(event.Event{}, s.wrapRead(fmt.Errorf("ledger: scan events from %d: %w", from, err)))
			return
		}
		var failed error
		for ok := it.First(); ok; ok = it.Next() {
			seq, mine := indexSeq(p, it.Key())
			if !mine {
				continue
			}
			ev, err := decodeRecord(seq, it.Value())
			if err != nil {
				failed = fmt.Errorf("ledger: scan events at %d: %w", seq, err)
				break
			}
			if !yield(ev, nil) {
				_ = it.Close()
				return
			}
		}
		if err := errors.Join(failed, it.Error(), it.Close()); err != nil {
			yield(event.Event{}, s.wrapRead(err))
		}
	}
}
