package localstate

import (
	"errors"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// EpochAt applies the ledger's rule by stream position: the epoch in force
// at a sequence is the highest election before it, whatever order the
// elections were recorded in.
func TestEpochAtFollowsStreamOrder(t *testing.T) {
	s := open(t, t.TempDir())
	at := func(seq uint64) uint64 {
		t.Helper()
		e, err := s.EpochAt(seq)
		must(t, err)
		return e
	}
	raise := func(seq, epoch uint64, want bool) {
		t.Helper()
		got, err := s.RaiseEpoch(seq, epoch)
		must(t, err)
		if got != want {
			t.Fatalf("RaiseEpoch(%d, %d) = %v, want %v", seq, epoch, got, want)
		}
	}
	if at(100) != 0 {
		t.Fatal("EpochAt on an empty store is not 0")
	}
	raise(10, 5, true)
	raise(30, 9, true)
	for _, c := range []struct{ seq, want uint64 }{{1, 0}, {10, 0}, {11, 5}, {30, 5}, {31, 9}, {1 << 40, 9}} {
		if got := at(c.seq); got != c.want {
			t.Errorf("EpochAt(%d) = %d, want %d", c.seq, got, c.want)
		}
	}
	raise(30, 9, false) // the same election again (redelivery)
	raise(40, 7, false) // a stale election: the ledger ignores it too
	raise(20, 4, false) // older than the epoch already in force at 20
	// An election recorded late (redelivered) but earlier in the stream:
	// it raises the epoch from its own position on, and the later, lower
	// record it covers is dropped.
	raise(20, 12, true)
	for _, c := range []struct{ seq, want uint64 }{{20, 5}, {21, 12}, {31, 12}} {
		if got := at(c.seq); got != c.want {
			t.Errorf("after a late election, EpochAt(%d) = %d, want %d", c.seq, got, c.want)
		}
	}
	e, err := s.Epoch()
	must(t, err)
	if e != 12 {
		t.Fatalf("Epoch = %d, want 12", e)
	}
}

func TestEpochSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	if _, err := s.RaiseEpoch(7, 3); err != nil {
		t.Fatal(err)
	}
	must(t, s.Close())
	if _, err := s.RaiseEpoch(8, 4); !errors.Is(err, ErrClosed) {
		t.Fatalf("RaiseEpoch after Close = %v, want ErrClosed", err)
	}
	s = open(t, dir)
	if e, err := s.Epoch(); err != nil || e != 3 {
		t.Fatalf("Epoch after reopen = %d, %v; want 3", e, err)
	}
}

// A failed fsync is reported as ErrSync, and the store refuses every later
// write even once the disk works again: what it holds may not be durable.
func TestFailedSyncRefusesLaterWrites(t *testing.T) {
	var armed atomic.Bool
	errDisk := errors.New("injected fsync failure")
	fs := pebblelog.FailingSyncFS(vfs.Default, &armed, errDisk)
	s, err := OpenFS(t.TempDir(), fs, nil)
	must(t, err)
	defer s.Close()
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "a", Attempt: 1}))
	armed.Store(true)
	err = s.MarkFinished("r", "a", 1)
	if !errors.Is(err, ErrSync) || !errors.Is(err, errDisk) {
		t.Fatalf("MarkFinished on a failing disk = %v, want ErrSync wrapping the disk error", err)
	}
	armed.Store(false)
	if err := s.MarkStarted(Attempt{Run: "r", Step: "b", Attempt: 1}); !errors.Is(err, ErrSync) {
		t.Errorf("MarkStarted after a failed sync = %v, want ErrSync", err)
	}
	if _, err := s.RaiseEpoch(1, 1); !errors.Is(err, ErrSync) {
		t.Errorf("RaiseEpoch after a failed sync = %v, want ErrSync", err)
	}
}

// Differential: EpochAt, answered from memory after the newest election,
// agrees with a read of Pebble at every sequence, through random
// elections recorded in any order and reopens.
func TestEpochAtMatchesPebble(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	defer func() { s.Close() }()
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		switch op := rng.IntN(100); {
		case op < 20:
			_, err := s.RaiseEpoch(uint64(rng.IntN(200)), uint64(rng.IntN(50)))
			must(t, err)
		case op < 22:
			must(t, s.Close())
			s, err = Open(dir, nil)
			must(t, err)
		default:
			seq := uint64(rng.IntN(220))
			got, err := s.EpochAt(seq)
			must(t, err)
			s.mu.Lock()
			want, err := s.epochSeek(seq)
			s.mu.Unlock()
			must(t, err)
			if got != want {
				t.Fatalf("op %d: EpochAt(%d) = %d, Pebble says %d", i, seq, got, want)
			}
		}
	}
}

// BenchmarkEpochAt is the fence of an assignment: the epoch in force at a
// sequence after the newest election, among many recorded.
func BenchmarkEpochAt(b *testing.B) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		if _, err := s.RaiseEpoch(uint64(10*i+1), uint64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if e, err := s.EpochAt(5000); err != nil || e != 100 {
			b.Fatal(e, err)
		}
	}
}
