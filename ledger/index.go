package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// An Indexer derives a query index from the ledger's records — run
// summaries by time and status, the steps of a run — and writes it in the
// same Pebble batch as the records it derives from, so that an index can
// never disagree with the ledger. It may keep in-memory state (what live
// records still change); that state is snapshotted by the ledger in the
// same batch too, so a restart restores it from the snapshot plus the
// records after it, without reading the whole history.
//
// Every method is called from the goroutine that appends, one at a time.
type Indexer interface {
	// Name names the index: its entries live under "i/<name>/". Stable.
	Name() string
	// Version is the index's layout version. A stored index of another
	// version (or none) is rebuilt from the ledger when the indexer is
	// attached.
	Version() uint32
	// Index stages into w what rec changes in the index. It is called for
	// every record, in ledger order, before the batch that holds the record
	// commits. With w.Discard() true the entries are already stored (the
	// ledger is replaying records after a snapshot): only the in-memory
	// state must move.
	Index(w *IndexWriter, rec IndexRecord) error
	// Committed reports the outcome of the commit that holds everything
	// staged since the previous call: nil, or the commit's error (the
	// ledger then refuses further appends and the node stops).
	Committed(err error)
	// Snapshot returns the in-memory state as of the last record indexed.
	Snapshot() ([]byte, error)
	// Restore replaces the in-memory state with a snapshot; nil data means
	// the empty state (a rebuild from position 1).
	Restore(data []byte) error
}

// A BatchIndexer is an Indexer that stages part of its entries once per
// batch rather than once per record — an entry that several records of a
// batch change is then written once, as the last of them leaves it.
type BatchIndexer interface {
	Indexer
	// Flush stages what the records indexed since the previous Flush left
	// to write. It is called after the last record of every batch that
	// Index wrote into (w.Discard() false), with the same writer, before
	// the batch commits; and with a discarding writer once the records
	// whose entries are stored have been replayed.
	Flush(w *IndexWriter) error
}

// flushIndex calls ix.Flush when ix is a BatchIndexer.
func flushIndex(ix Indexer, w *IndexWriter) error {
	if bx, ok := ix.(BatchIndexer); ok {
		return bx.Flush(w)
	}
	return nil
}

// IndexRecord is what an Indexer sees of a record.
type IndexRecord struct {
	// Event is the record, Seq and StreamSeq set.
	Event event.Event
	// StreamTime is the stream timestamp of the message the record came
	// in (Record.StreamTime): the clock queries use.
	StreamTime time.Time
}

// IndexWriter stages an Indexer's entries into the batch of the records
// they derive from. Keys are relative to the index's own key space.
type IndexWriter struct {
	b       *pebble.Batch // nil: discard
	prefix  []byte
	scratch []byte
}

// Discard reports whether writes are dropped (the ledger replays records
// whose entries are already stored).
func (w *IndexWriter) Discard() bool { return w.b == nil }

func (w *IndexWriter) key(k []byte) []byte {
	w.scratch = append(append(w.scratch[:0], w.prefix...), k...)
	return w.scratch
}

// Set stages key → value.
func (w *IndexWriter) Set(key, value []byte) error {
	if w.b == nil {
		return nil
	}
	if err := w.b.Set(w.key(key), value, nil); err != nil {
		return fmt.Errorf("ledger: index %s: %w", w.prefix, err)
	}
	return nil
}

// Delete stages the removal of key (index entries are derived data: an
// index may drop what no longer holds; ledger records are never deleted).
func (w *IndexWriter) Delete(key []byte) error {
	if w.b == nil {
		return nil
	}
	if err := w.b.Delete(w.key(key), nil); err != nil {
		return fmt.Errorf("ledger: index %s: %w", w.prefix, err)
	}
	return nil
}

// Key prefixes of indexes.
const (
	prefixIndex     = "i/"
	prefixIndexMeta = "meta/index/"
	prefixIndexSnap = "meta/index-snap/"
)

func indexSpace(name string) []byte { return []byte(prefixIndex + name + "/") }

// indexMeta is the value at meta/index/<name>: the layout version and the
// ledger position the index is built through.
type indexMeta struct {
	version uint32
	seq     uint64
}

func (m indexMeta) encode() []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 12), m.version)
	return binary.BigEndian.AppendUint64(b, m.seq)
}

func decodeIndexMeta(b []byte) (indexMeta, error) {
	if len(b) != 12 {
		return indexMeta{}, fmt.Errorf("%w: index meta is %d bytes, want 12", ErrCorrupt, len(b))
	}
	return indexMeta{version: binary.BigEndian.Uint32(b), seq: binary.BigEndian.Uint64(b[4:])}, nil
}

// DefaultIndexSnapshotEvery is how many records pass between snapshots of an
// indexer's in-memory state.
const DefaultIndexSnapshotEvery = 10_000

// attached is an Indexer and its bookkeeping.
type attached struct {
	ix       Indexer
	space    []byte
	lastSnap uint64 // position of the last snapshot saved
}

// AttachIndexer registers ix. Before it returns, the index is made current:
// restored from its snapshot plus the records after it, caught up to the
// head if it is behind (a version of the node that did not keep it ran in
// between), or rebuilt from position 1 if it is missing, of another version
// or its snapshot is unusable — which reads the whole ledger once, logging
// progress. From then on Append calls it for every record. Attach indexers
// before the first Append.
func (s *Store) AttachIndexer(ix Indexer) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	at := &attached{ix: ix, space: indexSpace(ix.Name())}
	if err := s.catchUp(at); err != nil {
		return fmt.Errorf("ledger: index %s: %w", ix.Name(), err)
	}
	s.indexers = append(s.indexers, at)
	return nil
}

// catchUp brings at's index and in-memory state to the head.
func (s *Store) catchUp(at *attached) error {
	name := at.ix.Name()
	h := s.headNow()
	meta, ok, err := s.loadIndexMeta(name)
	if err != nil {
		return err
	}
	from := uint64(1) // first record to index with writes
	replayFrom := uint64(0)
	if ok && meta.version == at.ix.Version() && meta.seq <= h.seq {
		snapSeq, data, err := s.loadIndexSnapshot(name)
		switch {
		case err == nil && snapSeq <= meta.seq:
			if rerr := at.ix.Restore(data); rerr != nil {
				s.log.Warn("index snapshot unusable; rebuilding the index", "index", name, "err", rerr)
			} else {
				replayFrom, from = snapSeq+1, meta.seq+1
				at.lastSnap = snapSeq
			}
		case err == nil:
			s.log.Warn("index snapshot is ahead of its index; rebuilding the index", "index", name, "snapshot", snapSeq, "index_seq", meta.seq)
		case errors.Is(err, ErrNotFound) && meta.seq == 0:
			replayFrom, from = 1, 1
			if rerr := at.ix.Restore(nil); rerr != nil {
				return rerr
			}
		case errors.Is(err, ErrNotFound):
			s.log.Warn("index snapshot missing; rebuilding the index", "index", name)
		default:
			s.log.Warn("index snapshot damaged; rebuilding the index", "index", name, "err", err)
		}
	} else if ok {
		s.log.Info("index layout changed or ahead of the ledger; rebuilding it", "index", name, "stored_version", meta.version, "version", at.ix.Version(), "index_seq", meta.seq, "head", h.seq)
	}
	if replayFrom == 0 {
		// Rebuild: drop whatever is stored, start from the empty state.
		if err := at.ix.Restore(nil); err != nil {
			return err
		}
		if err := s.dropIndex(at); err != nil {
			return err
		}
		replayFrom, from = 1, 1
	}
	if from > h.seq && replayFrom >= from {
		return nil // restored exactly at the head
	}
	return s.reindex(at, replayFrom, from, h.seq)
}

// reindex feeds records replayFrom..head to the indexer: those before from
// with writes discarded (their entries are stored), the rest with writes,
// committed in bounded batches with the meta and, at the end, a snapshot.
func (s *Store) reindex(at *attached, replayFrom, from, headSeq uint64) error {
	name := at.ix.Name()
	start := time.Now()
	lastLog := start
	discard := &IndexWriter{}
	var b *pebble.Batch
	var w *IndexWriter
	var last uint64
	flush := func() error {
		if b == nil {
			return nil
		}
		defer func() { b.Close(); b, w = nil, nil }()
		if err := flushIndex(at.ix, w); err != nil {
			return err
		}
		if err := b.Set(indexMetaKey(name), indexMeta{version: at.ix.Version(), seq: last}.encode(), nil); err != nil {
			return err
		}
		if err := pebblelog.SyncCommit(b); err != nil {
			at.ix.Committed(err)
			return fmt.Errorf("%w: %w", ErrSync, err)
		}
		at.ix.Committed(nil)
		return nil
	}
	var c msgCache
	snap := s.db.NewSnapshot()
	defer snap.Close()
	for seq := replayFrom; seq <= headSeq; seq++ {
		rec, err := s.readRecord(snap, seq, &c)
		if err != nil {
			return err
		}
		ir := IndexRecord{Event: rec.Event, StreamTime: rec.StreamTime()}
		if seq < from {
			if err := at.ix.Index(discard, ir); err != nil {
				return err
			}
			if seq+1 == from {
				if err := flushIndex(at.ix, discard); err != nil {
					return err
				}
			}
			continue
		}
		if b == nil {
			b = s.db.NewBatch()
			w = &IndexWriter{b: b, prefix: at.space}
		}
		if err := at.ix.Index(w, ir); err != nil {
			return err
		}
		last = seq
		if b.Len() >= 4<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			s.log.Info("building index", "index", name, "at", seq, "head", headSeq)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := s.saveIndexSnapshot(at, headSeq); err != nil {
		return err
	}
	if from > 1 || headSeq >= uint64(DefaultIndexSnapshotEvery) {
		s.log.Info("index current", "index", name, "records", headSeq-replayFrom+1, "written_from", from, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// dropIndex removes at's entries, meta and snapshot.
func (s *Store) dropIndex(at *attached) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(at.space, prefixEnd(at.space), nil); err != nil {
		return err
	}
	if err := b.Delete(indexMetaKey(at.ix.Name()), nil); err != nil {
		return err
	}
	if err := b.Delete(indexSnapKey(at.ix.Name()), nil); err != nil {
		return err
	}
	if err := pebblelog.SyncCommit(b); err != nil {
		return fmt.Errorf("%w: drop index %s: %w", ErrSync, at.ix.Name(), err)
	}
	return nil
}

func indexMetaKey(name string) []byte { return []byte(prefixIndexMeta + name) }
func indexSnapKey(name string) []byte { return []byte(prefixIndexSnap + name) }

func (s *Store) loadIndexMeta(name string) (indexMeta, bool, error) {
	b, err := s.get(indexMetaKey(name))
	if errors.Is(err, ErrNotFound) {
		return indexMeta{}, false, nil
	}
	if err != nil {
		return indexMeta{}, false, err
	}
	m, err := decodeIndexMeta(b)
	return m, err == nil, err
}

func (s *Store) loadIndexSnapshot(name string) (uint64, []byte, error) {
	b, err := s.get(indexSnapKey(name))
	if err != nil {
		return 0, nil, err
	}
	return decodeSnapshot(name, b)
}

// saveIndexSnapshot writes the indexer's state as of seq, synced.
func (s *Store) saveIndexSnapshot(at *attached, seq uint64) error {
	data, err := at.ix.Snapshot()
	if err != nil {
		return fmt.Errorf("ledger: index %s: snapshot: %w", at.ix.Name(), err)
	}
	if err := s.syncSet(indexSnapKey(at.ix.Name()), encodeSnapshot(seq, data)); err != nil {
		return fmt.Errorf("ledger: index %s: save snapshot: %w", at.ix.Name(), err)
	}
	at.lastSnap = seq
	return nil
}

// stageIndexes hands the records an Append staged to every indexer, with
// the index meta and, every DefaultIndexSnapshotEvery records, a snapshot,
// all in the Append's batch.
func (a *appender) stageIndexes() error {
	if len(a.s.indexers) == 0 || len(a.out) == 0 {
		return nil
	}
	for _, at := range a.s.indexers {
		w := &IndexWriter{b: a.b, prefix: at.space}
		for i, ev := range a.out {
			if err := at.ix.Index(w, IndexRecord{Event: ev, StreamTime: a.times[i]}); err != nil {
				return fmt.Errorf("ledger: index %s at %d: %w", at.ix.Name(), ev.Seq, err)
			}
		}
		if err := flushIndex(at.ix, w); err != nil {
			return fmt.Errorf("ledger: index %s at %d: %w", at.ix.Name(), a.head.seq, err)
		}
		if err := a.b.Set(indexMetaKey(at.ix.Name()), indexMeta{version: at.ix.Version(), seq: a.head.seq}.encode(), nil); err != nil {
			return err
		}
		if a.head.seq-at.lastSnap >= DefaultIndexSnapshotEvery {
			data, err := at.ix.Snapshot()
			if err != nil {
				return fmt.Errorf("ledger: index %s: snapshot: %w", at.ix.Name(), err)
			}
			if err := a.b.Set(indexSnapKey(at.ix.Name()), encodeSnapshot(a.head.seq, data), nil); err != nil {
				return err
			}
			a.snapped = append(a.snapped, at)
		}
	}
	return nil
}

// indexesCommitted tells every indexer how the Append's commit went.
func (a *appender) indexesCommitted(err error) {
	for _, at := range a.s.indexers {
		at.ix.Committed(err)
	}
	if err == nil {
		for _, at := range a.snapped {
			at.lastSnap = a.head.seq
		}
	}
}

// snapshotIndexes saves every indexer's state at the head (at Close, so
// that a clean restart replays nothing).
func (s *Store) snapshotIndexes() error {
	h := s.headNow()
	var errs []error
	for _, at := range s.indexers {
		if at.lastSnap == h.seq {
			continue
		}
		errs = append(errs, s.saveIndexSnapshot(at, h.seq))
	}
	return errors.Join(errs...)
}

// IndexEntry is one entry of an index, its key relative to the index.
type IndexEntry struct {
	Key   []byte
	Value []byte
}

// IndexGet returns the value at key in index name, or an error wrapping
// ErrNotFound.
func (s *Store) IndexGet(name string, key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	return s.get(append(indexSpace(name), key...))
}

// IndexScan yields the entries of index name with lower <= key < upper
// (keys relative to the index; nil upper: no bound), ascending, or
// descending when reverse, from one consistent snapshot. Entries are
// copies the caller may keep.
func (s *Store) IndexScan(name string, lower, upper []byte, reverse bool) iter.Seq2[IndexEntry, error] {
	return func(yield func(IndexEntry, error) bool) {
		if err := s.acquire(); err != nil {
			yield(IndexEntry{}, err)
			return
		}
		defer s.release()
		space := indexSpace(name)
		o := &pebble.IterOptions{LowerBound: append(append([]byte(nil), space...), lower...)}
		if upper != nil {
			o.UpperBound = append(append([]byte(nil), space...), upper...)
		} else {
			o.UpperBound = prefixEnd(space)
		}
		it, err := s.db.NewIter(o)
		if err != nil {
			yield(IndexEntry{}, fmt.Errorf("ledger: scan index %s: %w", name, err))
			return
		}
		ok := it.First()
		next := it.Next
		if reverse {
			ok, next = it.Last(), it.Prev
		}
		for ; ok; ok = next() {
			e := IndexEntry{
				Key:   append([]byte(nil), it.Key()[len(space):]...),
				Value: append([]byte(nil), it.Value()...),
			}
			if !yield(e, nil) {
				_ = it.Close()
				return
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			yield(IndexEntry{}, fmt.Errorf("ledger: scan index %s: %w", name, err))
		}
	}
}
