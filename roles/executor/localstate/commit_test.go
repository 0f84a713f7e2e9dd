package localstate

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// walGate is a file system that counts the fsyncs of the write-ahead log
// and can hold one of them (to let requests queue behind a commit) or fail
// them all.
type walGate struct {
	syncs   atomic.Int64
	hold    atomic.Bool           // hold the next WAL sync
	held    chan struct{}         // receives when a sync is held
	release chan struct{}         // ends the hold
	fail    atomic.Pointer[error] // when set, every WAL sync fails with it
}

func newWALGate() *walGate {
	return &walGate{held: make(chan struct{}), release: make(chan struct{})}
}

func (g *walGate) fs() vfs.FS {
	return errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		isSync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if !isSync || !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		g.syncs.Add(1)
		fail := g.fail.Load() // as the sync began: a held sync succeeds
		if g.hold.CompareAndSwap(true, false) {
			g.held <- struct{}{}
			<-g.release
		}
		if fail != nil {
			return *fail
		}
		return nil
	}))
}

// queued is how many requests wait for the commit loop.
func (s *Store) queued() int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.mu.pending)
}

// behindHeldCommit starts a commit of first and holds its WAL sync, runs
// each of calls on its own goroutine, waits until all of them are queued
// behind the held commit, then lets the commit go and returns first's
// error and the calls' errors. The queued calls form the next group.
func behindHeldCommit(t *testing.T, s *Store, g *walGate, first Attempt, calls []func() error, beforeRelease func()) (error, []error) {
	t.Helper()
	g.hold.Store(true)
	firstErr := make(chan error, 1)
	go func() { firstErr <- s.MarkStarted(first) }()
	select {
	case <-g.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first commit did not reach its sync")
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	if err := poll.Wait(10*time.Second, func() bool { return s.queued() >= len(calls) }); err != nil {
		t.Fatalf("%v: %d of %d calls queued", err, s.queued(), len(calls))
	}
	if beforeRelease != nil {
		beforeRelease()
	}
	close(g.release)
	wg.Wait()
	return <-firstErr, errs
}

// Records that arrive while a commit is syncing share the next commit: 16
// concurrent attempts cost 2 fsyncs of the log, not 17, and every one of
// them is recorded.
func TestGroupCommitSharesSyncs(t *testing.T) {
	g := newWALGate()
	s, err := OpenFS(t.TempDir(), g.fs(), nil)
	must(t, err)
	defer s.Close()
	const n = 16
	calls := make([]func() error, n)
	for i := range calls {
		calls[i] = func() error { return s.MarkStarted(Attempt{Run: "r", Step: fmt.Sprintf("s%02d", i), Attempt: 1}) }
	}
	before := g.syncs.Load()
	firstErr, errs := behindHeldCommit(t, s, g, Attempt{Run: "r", Step: "first", Attempt: 1}, calls, nil)
	must(t, firstErr)
	for _, err := range errs {
		must(t, err)
	}
	if syncs := g.syncs.Load() - before; syncs != 2 {
		t.Errorf("%d attempts recorded with %d log fsyncs, want 2 (one per group)", n+1, syncs)
	}
	left, err := s.Unfinished()
	must(t, err)
	if len(left) != n+1 {
		t.Fatalf("Unfinished = %d attempts, want %d", len(left), n+1)
	}
}

// A group is checked as the store will be once it is written: a finish
// queued after its start in the same group succeeds, and a call refused on
// its own (here: restarting a finished attempt) records nothing of its own
// — all or nothing — without failing the rest of the group.
func TestGroupCommitChecksInOrder(t *testing.T) {
	g := newWALGate()
	s, err := OpenFS(t.TempDir(), g.fs(), nil)
	must(t, err)
	defer s.Close()
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "done", Attempt: 1}))
	must(t, s.MarkFinished("r", "done", 1))

	// Queued in this order behind the held commit (each call waits until
	// the previous one is queued, so the group keeps their order).
	steps := []func() error{
		func() error { return s.MarkStarted(Attempt{Run: "r", Step: "x", Attempt: 1}) },
		func() error { return s.MarkFinished("r", "x", 1) },
		func() error {
			return s.MarkStarted(Attempt{Run: "r", Step: "y", Attempt: 1}, Attempt{Run: "r", Step: "done", Attempt: 1})
		},
		func() error { return s.MarkFinished("r", "never", 1) },
	}
	calls := make([]func() error, len(steps))
	for i, step := range steps {
		calls[i] = func() error {
			if err := poll.Wait(10*time.Second, func() bool { return s.queued() >= i }); err != nil {
				return fmt.Errorf("%d calls queued before call %d: %w", s.queued(), i, err)
			}
			return step()
		}
	}
	firstErr, errs := behindHeldCommit(t, s, g, Attempt{Run: "r", Step: "first", Attempt: 1}, calls, nil)
	must(t, firstErr)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("start then finish of x in one group: %v, %v", errs[0], errs[1])
	}
	if a, ok, _ := s.Lookup("r", "x", 1); !ok || a.State != StateFinished {
		t.Errorf("x after its group = %+v (found %v), want finished", a, ok)
	}
	if !errors.Is(errs[2], ErrFinished) {
		t.Errorf("starting y and the finished attempt = %v, want ErrFinished", errs[2])
	}
	if _, ok, _ := s.Lookup("r", "y", 1); ok {
		t.Error("y recorded although its call was refused")
	}
	if !errors.Is(errs[3], ErrNotFound) {
		t.Errorf("finishing an attempt never started = %v, want ErrNotFound", errs[3])
	}
}

// A failed fsync of a group commit fails every call of the group with
// ErrSync wrapping the disk error, and every later write too.
func TestGroupCommitFailedSyncFailsGroup(t *testing.T) {
	g := newWALGate()
	s, err := OpenFS(t.TempDir(), g.fs(), nil)
	must(t, err)
	defer s.Close()
	errDisk := errors.New("injected fsync failure")
	const n = 8
	calls := make([]func() error, n)
	for i := range calls {
		calls[i] = func() error { return s.MarkStarted(Attempt{Run: "r", Step: fmt.Sprintf("s%d", i), Attempt: 1}) }
	}
	// The failure is armed while the group waits behind the held commit,
	// which succeeds.
	firstErr, errs := behindHeldCommit(t, s, g, Attempt{Run: "r", Step: "first", Attempt: 1}, calls, func() { g.fail.Store(&errDisk) })
	must(t, firstErr)
	for i, err := range errs {
		if !errors.Is(err, ErrSync) || !errors.Is(err, errDisk) {
			t.Errorf("call %d of the failed group = %v, want ErrSync wrapping the disk error", i, err)
		}
	}
	g.fail.Store(nil)
	if err := s.MarkFinished("r", "first", 1); !errors.Is(err, ErrSync) {
		t.Errorf("MarkFinished after a failed group = %v, want ErrSync", err)
	}
}

// Close commits what was queued before it and refuses what comes after.
func TestCloseCommitsQueued(t *testing.T) {
	dir := t.TempDir()
	g := newWALGate()
	s, err := OpenFS(dir, g.fs(), nil)
	must(t, err)
	const n = 4
	calls := make([]func() error, n)
	for i := range calls {
		calls[i] = func() error { return s.MarkStarted(Attempt{Run: "r", Step: fmt.Sprintf("s%d", i), Attempt: 1}) }
	}
	closed := make(chan error, 1)
	firstErr, errs := behindHeldCommit(t, s, g, Attempt{Run: "r", Step: "first", Attempt: 1}, calls, func() {
		go func() { closed <- s.Close() }()
		poll.Eventually(t, 10*time.Second, "Close to begin", s.closing)
	})
	must(t, firstErr)
	for _, err := range errs {
		must(t, err)
	}
	must(t, <-closed)
	if err := s.MarkStarted(Attempt{Run: "r", Step: "late", Attempt: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("MarkStarted after Close = %v, want ErrClosed", err)
	}
	s = open(t, dir)
	left, err := s.Unfinished()
	must(t, err)
	if len(left) != n+1 {
		t.Fatalf("after reopen, Unfinished = %d attempts, want %d", len(left), n+1)
	}
}

// closing reports whether Close has begun refusing requests.
func (s *Store) closing() bool {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return s.queue.mu.closed
}

// BeginStarted returns while the record's fsync is under way; its wait
// returns only once the fsync is done, with what MarkStarted returns.
func TestBeginStartedWaitsForTheSync(t *testing.T) {
	g := newWALGate()
	s, err := OpenFS(t.TempDir(), g.fs(), nil)
	must(t, err)
	defer s.Close()
	g.hold.Store(true)
	begun := make(chan func() error, 1)
	go func() { begun <- s.BeginStarted(Attempt{Run: "r", Step: "s", Attempt: 1}) }()
	var wait func() error
	select {
	case wait = <-begun:
	case <-time.After(10 * time.Second):
		t.Fatal("BeginStarted did not return while its fsync was held")
	}
	select {
	case <-g.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the record's commit did not reach its sync")
	}
	waited := make(chan error, 1)
	go func() { waited <- wait() }()
	select {
	case err := <-waited:
		t.Fatalf("the wait returned (%v) while the record's fsync was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(g.release)
	must(t, <-waited)
	if a, ok, err := s.Lookup("r", "s", 1); err != nil || !ok || a.State != StateStarted {
		t.Fatalf("after the wait: %+v %v %v, want the attempt recorded started", a, ok, err)
	}
	// A refused record is refused by its wait, as MarkStarted refuses it.
	if err := s.BeginStarted(Attempt{Run: "", Step: "s", Attempt: 1})(); err == nil {
		t.Error("a record without a run: the wait returned nil")
	}
}
