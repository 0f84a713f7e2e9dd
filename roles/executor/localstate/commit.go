package localstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/cockroachdb/pebble/v2"
)

// request is one MarkStarted, MarkFinishedAll or MarkDropped call waiting
// for its commit.
type request struct {
	op       op
	attempts []Attempt // the records to write (started) or their ids (finish, drop)
	err      error     // set before done is closed
	done     chan struct{}
}

// op is what a request records.
type op int

const (
	opStart  op = iota // record as started
	opFinish           // mark finished
	opDrop             // record as dropped, unless recorded already
	opForget           // delete a started record (never a finished or dropped one)
)

// queue holds the requests the commit loop has not taken yet.
type queue struct {
	mu struct {
		sync.Mutex
		pending []*request
		closed  bool
	}
	wake     chan struct{} // capacity 1: something is pending
	quit     chan struct{} // closed by stop
	done     chan struct{} // closed when the loop has returned
	stopOnce sync.Once
}

func (q *queue) init() {
	q.wake = make(chan struct{}, 1)
	q.quit = make(chan struct{})
	q.done = make(chan struct{})
}

// stop refuses new requests and waits until the loop has committed what
// was queued and returned.
func (q *queue) stop() {
	q.stopOnce.Do(func() {
		q.mu.Lock()
		q.mu.closed = true
		q.mu.Unlock()
		close(q.quit)
	})
	<-q.done
}

// take returns the pending requests and empties the queue.
func (q *queue) take() []*request {
	q.mu.Lock()
	defer q.mu.Unlock()
	reqs := q.mu.pending
	q.mu.pending = nil
	return reqs
}

// submit queues r for the commit loop and waits for its commit.
func (s *Store) submit(r *request) error { return s.enqueue(r)() }

// enqueue queues r for the commit loop and returns the wait for its
// commit.
func (s *Store) enqueue(r *request) (wait func() error) {
	if len(r.attempts) == 0 {
		return func() error { return nil }
	}
	r.done = make(chan struct{})
	q := &s.queue
	q.mu.Lock()
	if q.mu.closed {
		q.mu.Unlock()
		return func() error { return ErrClosed }
	}
	q.mu.pending = append(q.mu.pending, r)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return func() error {
		<-r.done
		return r.err
	}
}

// commitLoop is the group commit of attempt records: each turn it takes
// every request pending — those that arrived while the previous commit
// was syncing — and writes them in one batch committed with pebble.Sync,
// so that concurrent records share one fsync. It ends when the store is
// closed, after committing what was queued before.
func (s *Store) commitLoop() {
	q := &s.queue
	defer close(q.done)
	for {
		select {
		case <-q.wake:
			s.commit(q.take())
		case <-q.quit:
			s.commit(q.take())
			return
		}
	}
}

// commit writes reqs in one synced batch and answers them. A request
// refused on its own (ErrFinished, ErrNotFound) is answered alone; a
// failed sync fails every request of the group with ErrSync.
func (s *Store) commit(reqs []*request) {
	if len(reqs) == 0 {
		return
	}
	defer func() {
		for _, r := range reqs {
			close(r.done)
		}
	}()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	db, failed := s.mu.db, s.mu.failed
	s.mu.Unlock()
	if failed != nil {
		failAll(reqs, failed)
		return
	}
	g := group{db: db, lookup: s.lookupKnown, written: map[string]Attempt{}}
	for _, r := range reqs {
		recs, err := g.stage(r)
		if err != nil {
			r.err = err
			continue
		}
		g.taken = append(g.taken, r)
		g.recs = append(g.recs, recs...)
	}
	if len(g.recs) == 0 {
		return // nothing to write (refused, or finishes already recorded)
	}
	if err := g.commit(); err != nil {
		s.known.forget() // what Pebble holds now is not known
		if errors.Is(err, ErrSync) {
			s.mu.Lock()
			if s.mu.failed == nil {
				s.mu.failed = err
			}
			s.mu.Unlock()
		}
		failAll(g.taken, err)
		return
	}
	s.known.committed(g.recs)
}

func failAll(reqs []*request, err error) {
	for _, r := range reqs {
		r.err = err
	}
}

// group is one commit of the loop being built.
type group struct {
	db *pebble.DB
	// lookup reads a record (Store.lookupKnown).
	lookup func(db *pebble.DB, run, step string, attempt int) (Attempt, bool, error)
	// written are the records this group writes, by record key: a later
	// request of the group sees them as the store will.
	written map[string]Attempt
	taken   []*request
	recs    []Attempt
}

// stage checks r against the store and the group's earlier records and
// returns the records it writes; nothing is staged if r is refused.
func (g *group) stage(r *request) ([]Attempt, error) {
	now := time.Now().UTC()
	mine := map[string]Attempt{}
	var out []Attempt
	for _, a := range r.attempts {
		k := string(attemptKey(recordPrefix, a.Run, a.Step, a.Attempt))
		cur, ok := mine[k]
		if !ok {
			cur, ok = g.written[k]
		}
		if !ok {
			var err error
			if cur, ok, err = g.lookup(g.db, a.Run, a.Step, a.Attempt); err != nil {
				return nil, err
			}
		}
		if ok && cur.State == "" { // forgotten earlier in this group
			ok = false
		}
		switch {
		case r.op == opForget && (!ok || cur.State != StateStarted):
			continue // nothing to forget: never undo a finish or a drop
		case r.op == opForget:
			a = Attempt{Run: a.Run, Step: a.Step, Attempt: a.Attempt} // State "": deleted
		case r.op == opDrop && ok:
			continue // recorded already: a drop never hides a start
		case r.op == opDrop:
			a = Attempt{Run: a.Run, Step: a.Step, Attempt: a.Attempt, State: StateDropped, Finished: now}
		case r.op == opFinish && !ok:
			return nil, fmt.Errorf("%w: %s/%s attempt %d", ErrNotFound, a.Run, a.Step, a.Attempt)
		case r.op == opFinish && cur.State != StateStarted:
			continue // idempotent; a dropped attempt has nothing to finish
		case r.op == opFinish:
			cur.State, cur.Finished = StateFinished, now
			a = cur
		case ok && cur.State == StateFinished:
			return nil, fmt.Errorf("%w: %s/%s attempt %d", ErrFinished, a.Run, a.Step, a.Attempt)
		case ok && cur.State == StateDropped:
			return nil, fmt.Errorf("%w: %s/%s attempt %d", ErrDropped, a.Run, a.Step, a.Attempt)
		}
		mine[k] = a
		out = append(out, a)
	}
	for k, a := range mine {
		g.written[k] = a
	}
	return out, nil
}

// commit writes the group's records, each with its place in the
// unfinished index, in one batch committed with pebble.Sync. A failed sync
// is returned wrapped in ErrSync.
func (g *group) commit() error {
	b := g.db.NewBatch()
	defer b.Close()
	for _, a := range g.recs {
		if err := putAttempt(b, a); err != nil {
			return err
		}
	}
	if err := pebblelog.SyncCommit(b); err != nil {
		return fmt.Errorf("%w: %d attempt records (first %s/%s attempt %d): %w",
			ErrSync, len(g.recs), g.recs[0].Run, g.recs[0].Step, g.recs[0].Attempt, err)
	}
	return nil
}

// putAttempt adds a's record to b and keeps the unfinished index in step.
func putAttempt(b *pebble.Batch, a Attempt) error {
	v, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("localstate: encode %s/%s attempt %d: %w", a.Run, a.Step, a.Attempt, err)
	}
	rk := attemptKey(recordPrefix, a.Run, a.Step, a.Attempt)
	uk := attemptKey(unfinishedPrefix, a.Run, a.Step, a.Attempt)
	if a.State == "" { // forgotten: no record at all
		if err := b.Delete(rk, nil); err != nil {
			return fmt.Errorf("localstate: batch %s/%s attempt %d: %w", a.Run, a.Step, a.Attempt, err)
		}
		if err := b.Delete(uk, nil); err != nil {
			return fmt.Errorf("localstate: batch %s/%s attempt %d: %w", a.Run, a.Step, a.Attempt, err)
		}
		return nil
	}
	if err := b.Set(rk, v, nil); err != nil {
		return fmt.Errorf("localstate: batch %s/%s attempt %d: %w", a.Run, a.Step, a.Attempt, err)
	}
	if a.State == StateStarted {
		err = b.Set(uk, v, nil)
	} else {
		err = b.Delete(uk, nil)
	}
	if err != nil {
		return fmt.Errorf("localstate: batch %s/%s attempt %d: %w", a.Run, a.Step, a.Attempt, err)
	}
	return nil
}
