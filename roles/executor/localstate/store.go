package localstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Errors.
var (
	// ErrInvalid marks an attempt with an empty or malformed run or step id
	// or a negative attempt number.
	ErrInvalid = errors.New("localstate: invalid attempt")
	// ErrNotFound is returned by MarkFinished for an attempt never started.
	ErrNotFound = errors.New("localstate: not found")
	// ErrFinished is returned by MarkStarted for an attempt already finished.
	ErrFinished = errors.New("localstate: attempt already finished")
	// ErrDropped is returned by MarkStarted for an attempt recorded as
	// dropped: cancelled before it started, it must never start.
	ErrDropped = errors.New("localstate: attempt dropped before it started")
	// ErrSync marks a failed synced write: the record may not be durable and
	// the node must stop. After one, every later write fails with ErrSync.
	ErrSync = errors.New("localstate: sync failed")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("localstate: closed")
)

// Store is the executor's local attempt store. It is safe for concurrent use.
type Store struct {
	mu struct {
		sync.Mutex
		db *pebble.DB // nil once closed
		// failed is the first failed sync; every later write returns it.
		failed error
		// newest is the newest election, when known (see epochAtLocked).
		newest newestElection
	}
	// commitMu is held by whoever reads attempt records to write them
	// (the commit loop, Prune), from the read to the commit, so that each
	// sees the other's writes. Taken before mu.
	commitMu sync.Mutex
	queue    queue
	// known answers most lookups from memory (see known).
	known known
}

// Open opens (or creates) the store in dir. A nil logger discards Pebble's
// log lines.
func Open(dir string, logger *slog.Logger) (*Store, error) {
	return OpenFS(dir, nil, logger)
}

// OpenFS is Open on the file system fs (nil means the operating system's).
// Tests use it to inject disk failures (pebble's vfs/errorfs).
func OpenFS(dir string, fs vfs.FS, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts, release := pebblelog.SmallStoreOptions(logger, fs)
	db, err := pebble.Open(dir, opts)
	release()
	if err != nil {
		return nil, fmt.Errorf("localstate: open %s: %w", dir, err)
	}
	s := &Store{}
	s.mu.db = db
	s.queue.init()
	s.known.init()
	go s.commitLoop()
	return s, nil
}

// Close commits the records already queued, stops the commit loop and
// closes the store. It is idempotent; later writes fail with ErrClosed.
func (s *Store) Close() error {
	s.queue.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return nil
	}
	err := s.mu.db.Close()
	s.mu.db = nil
	if err != nil {
		return fmt.Errorf("localstate: close: %w", err)
	}
	return nil
}

// MarkStarted records that the attempts began, synced before it returns:
// one commit for all of them, shared with the records of concurrent
// callers (see commitLoop). State is set to StateStarted; a zero Started
// is set to now. Marking an attempt already started again overwrites it (a
// restart of the same attempt); marking a finished attempt fails with
// ErrFinished. A call is all or nothing: if one attempt is refused, none
// of them is recorded.
func (s *Store) MarkStarted(as ...Attempt) error { return s.BeginStarted(as...)() }

// BeginStarted is MarkStarted in two halves, so that the caller can work
// beside the fsync: it hands the record to the commit loop and returns
// the wait for its commit, which returns what MarkStarted would. Nothing
// is durable, nor may anything it records begin, before wait returned nil.
func (s *Store) BeginStarted(as ...Attempt) (wait func() error) {
	now := time.Now()
	recs := make([]Attempt, len(as))
	for i, a := range as {
		if err := checkID(a.Run, a.Step, a.Attempt); err != nil {
			return func() error { return err }
		}
		a.State = StateStarted
		a.Finished = time.Time{}
		if a.Started.IsZero() {
			a.Started = now
		}
		a.Started = a.Started.UTC()
		recs[i] = a
	}
	return s.enqueue(&request{op: opStart, attempts: recs})
}

// MarkFinished records that the attempt ended, synced before it returns. It
// is idempotent; an attempt never started fails with ErrNotFound.
func (s *Store) MarkFinished(run, step string, attempt int) error {
	return s.MarkFinishedAll(Attempt{Run: run, Step: step, Attempt: attempt})
}

// MarkFinishedAll is MarkFinished for several attempts (identified by Run,
// Step and Attempt; the other fields are ignored) in one commit, shared
// with the records of concurrent callers. It is all or nothing, like
// MarkStarted.
func (s *Store) MarkFinishedAll(as ...Attempt) error {
	ids := make([]Attempt, len(as))
	for i, a := range as {
		if err := checkID(a.Run, a.Step, a.Attempt); err != nil {
			return err
		}
		ids[i] = Attempt{Run: a.Run, Step: a.Step, Attempt: a.Attempt}
	}
	return s.submit(&request{op: opFinish, attempts: ids})
}

// MarkDropped records that the attempts (identified by Run, Step and
// Attempt) were cancelled before they started and must never start,
// synced before it returns, in one commit shared like MarkStarted's. An
// attempt already recorded — started, finished or dropped — is left as it
// is: a drop never hides an attempt that may have run. A dropped attempt
// is found by Lookup (State StateDropped) and refused by MarkStarted with
// ErrDropped; it is not in Unfinished.
func (s *Store) MarkDropped(as ...Attempt) error {
	ids := make([]Attempt, len(as))
	for i, a := range as {
		if err := checkID(a.Run, a.Step, a.Attempt); err != nil {
			return err
		}
		ids[i] = Attempt{Run: a.Run, Step: a.Step, Attempt: a.Attempt}
	}
	return s.submit(&request{op: opDrop, attempts: ids})
}

// Forget deletes the records of attempts (identified by Run, Step and
// Attempt) that were recorded started but whose process never started —
// the executor recorded them ahead of a free slot and gave them back —
// synced before it returns, in one commit shared like MarkStarted's.
// Afterwards Lookup does not find them and they are not in Unfinished,
// so their assignment, delivered again, may run. A finished or dropped
// attempt, or one not recorded, is left as it is.
func (s *Store) Forget(as ...Attempt) error {
	ids := make([]Attempt, len(as))
	for i, a := range as {
		if err := checkID(a.Run, a.Step, a.Attempt); err != nil {
			return err
		}
		ids[i] = Attempt{Run: a.Run, Step: a.Step, Attempt: a.Attempt}
	}
	return s.submit(&request{op: opForget, attempts: ids})
}

// Lookup returns the record of one attempt; ok is false if it was never
// started.
func (s *Store) Lookup(run, step string, attempt int) (Attempt, bool, error) {
	if err := checkID(run, step, attempt); err != nil {
		return Attempt{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(run, step, attempt)
}

// Unfinished returns the attempts started but never finished, ordered by
// run, step and attempt. After a crash these are the attempts whose step
// may have partly run.
func (s *Store) Unfinished() ([]Attempt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return nil, ErrClosed
	}
	it, err := s.mu.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte(unfinishedPrefix),
		UpperBound: upperBound(unfinishedPrefix),
	})
	if err != nil {
		return nil, fmt.Errorf("localstate: scan unfinished: %w", err)
	}
	var out []Attempt
	for it.First(); it.Valid(); it.Next() {
		var a Attempt
		if err := json.Unmarshal(it.Value(), &a); err != nil {
			it.Close()
			return nil, fmt.Errorf("localstate: decode unfinished %q: %w", it.Key(), err)
		}
		out = append(out, a)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("localstate: scan unfinished: %w", err)
	}
	return out, nil
}

// Prune deletes finished attempts that started before cutoff, and dropped
// ones recorded before it, and returns how many it deleted. Unfinished
// attempts are never pruned.
func (s *Store) Prune(cutoff time.Time) (int, error) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.db == nil {
		return 0, ErrClosed
	}
	it, err := s.mu.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte(recordPrefix),
		UpperBound: upperBound(recordPrefix),
	})
	if err != nil {
		return 0, fmt.Errorf("localstate: scan attempts: %w", err)
	}
	b := s.mu.db.NewBatch()
	defer b.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		var a Attempt
		if err := json.Unmarshal(it.Value(), &a); err != nil {
			it.Close()
			return 0, fmt.Errorf("localstate: decode attempt %q: %w", it.Key(), err)
		}
		if (a.State == StateFinished && a.Started.Before(cutoff)) || (a.State == StateDropped && a.Finished.Before(cutoff)) {
			if err := b.Delete(it.Key(), nil); err != nil {
				it.Close()
				return 0, fmt.Errorf("localstate: prune: %w", err)
			}
			n++
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("localstate: scan attempts: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	err = s.commitLocked(b, fmt.Sprintf("prune %d attempts", n))
	s.known.forget() // records it knew of are gone
	if err != nil {
		return 0, err
	}
	return n, nil
}

// lookupLocked reads one attempt record.
func (s *Store) lookupLocked(run, step string, attempt int) (Attempt, bool, error) {
	if s.mu.db == nil {
		return Attempt{}, false, ErrClosed
	}
	return s.lookupKnown(s.mu.db, run, step, attempt)
}

// lookupIn reads one attempt record from db.
func lookupIn(db *pebble.DB, run, step string, attempt int) (Attempt, bool, error) {
	v, closer, err := db.Get(attemptKey(recordPrefix, run, step, attempt))
	if errors.Is(err, pebble.ErrNotFound) {
		return Attempt{}, false, nil
	}
	if err != nil {
		return Attempt{}, false, fmt.Errorf("localstate: get %s/%s attempt %d: %w", run, step, attempt, err)
	}
	defer closer.Close()
	var a Attempt
	if err := json.Unmarshal(v, &a); err != nil {
		return Attempt{}, false, fmt.Errorf("localstate: decode %s/%s attempt %d: %w", run, step, attempt, err)
	}
	return a, true, nil
}

// commitLocked commits b synced. A failed sync is remembered: the store
// refuses every later write, since what it holds may not be durable.
func (s *Store) commitLocked(b *pebble.Batch, what string) error {
	if s.mu.failed != nil {
		return s.mu.failed
	}
	if err := pebblelog.SyncCommit(b); err != nil {
		s.mu.failed = fmt.Errorf("%w: %s: %w", ErrSync, what, err)
		return s.mu.failed
	}
	return nil
}
