package localstate

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// truth reads an attempt record from Pebble itself, past known.
func truth(t *testing.T, s *Store, run, step string, attempt int) (Attempt, bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok, err := lookupIn(s.mu.db, run, step, attempt)
	if err != nil {
		t.Fatal(err)
	}
	return a, ok
}

// sameRecord compares records as Pebble would hold them (times by
// instant).
func sameRecord(a, b Attempt) bool {
	return a.Run == b.Run && a.Step == b.Step && a.Attempt == b.Attempt && a.State == b.State && a.PID == b.PID &&
		a.Started.Equal(b.Started) && a.Finished.Equal(b.Finished)
}

// Differential: through random starts, finishes, drops, forgets, prunes
// and reopens, Lookup answers exactly what Pebble holds, and the writes'
// own checks (which read through known too) refuse exactly what they
// refused before.
func TestKnownLookupMatchesPebble(t *testing.T) {
	for _, bound := range []int{2, 16, knownRecords} {
		t.Run(fmt.Sprintf("bound%d", bound), func(t *testing.T) { knownMatchesPebble(t, bound) })
	}
}

// knownMatchesPebble is TestKnownLookupMatchesPebble with known bounded to
// bound records and 4×bound key hashes.
func knownMatchesPebble(t *testing.T, bound int) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	s.known.maxRecs, s.known.maxKeys = bound, 4*bound
	defer func() { s.Close() }()
	rng := rand.New(rand.NewPCG(1, uint64(bound)))
	// A few runs all along, and a new run every 40 operations: new runs
	// are the fresh ones.
	runs := []string{"r1", "r2", "r2x", "r"}
	op := 0
	pick := func() Attempt {
		run := runs[rng.IntN(len(runs))]
		if rng.IntN(2) == 0 {
			run = fmt.Sprintf("n%d", op/40)
		}
		return Attempt{Run: run, Step: fmt.Sprintf("s%d", rng.IntN(4)), Attempt: rng.IntN(2)}
	}
	model := map[string]string{} // state by attempt, "" when absent
	id := func(a Attempt) string { return fmt.Sprintf("%s/%s/%d", a.Run, a.Step, a.Attempt) }
	for i := range 4000 {
		op = i
		a := pick()
		cur := model[id(a)]
		switch op := rng.IntN(1000); {
		case op < 300:
			err := s.MarkStarted(a)
			switch cur {
			case StateFinished, StateDropped:
				if err == nil {
					t.Fatalf("op %d: MarkStarted of a %s attempt %s succeeded", i, cur, id(a))
				}
			default:
				must(t, err)
				model[id(a)] = StateStarted
			}
		case op < 550:
			err := s.MarkFinishedAll(a)
			switch cur {
			case "":
				if err == nil {
					t.Fatalf("op %d: MarkFinished of an unrecorded attempt %s succeeded", i, id(a))
				}
			case StateStarted:
				must(t, err)
				model[id(a)] = StateFinished
			default:
				must(t, err)
			}
		case op < 650:
			must(t, s.MarkDropped(a))
			if cur == "" {
				model[id(a)] = StateDropped
			}
		case op < 720:
			must(t, s.Forget(a))
			if cur == StateStarted {
				model[id(a)] = ""
			}
		case op < 723:
			_, err := s.Prune(time.Now().Add(time.Hour))
			must(t, err)
			for k, st := range model {
				if st == StateFinished || st == StateDropped {
					model[k] = ""
				}
			}
		case op < 726:
			must(t, s.Close())
			s, err = Open(dir, nil)
			must(t, err)
			s.known.maxRecs, s.known.maxKeys = bound, 4*bound
		default:
			got, ok, err := s.Lookup(a.Run, a.Step, a.Attempt)
			must(t, err)
			want, wantOK := truth(t, s, a.Run, a.Step, a.Attempt)
			if ok != wantOK || (ok && !sameRecord(got, want)) || (ok && got.State != cur) || (!ok && cur != "") {
				t.Fatalf("op %d: Lookup(%s) = %+v, %v; Pebble holds %+v, %v; model %q", i, id(a), got, ok, want, wantOK, cur)
			}
		}
	}
}

// A probe that raced with a commit is not trusted: the run is not taken
// as fresh, since the read may have missed the record committed.
func TestKnownProbeRacingCommit(t *testing.T) {
	var k known
	k.init()
	gen, want := k.probeWanted("r")
	if !want {
		t.Fatal("a run never seen is not probed")
	}
	k.committed([]Attempt{{Run: "r", Step: "a", Attempt: 1, State: StateStarted}})
	k.probeDone("r", gen, true)
	if _, fresh := k.fresh["r"]; fresh {
		t.Fatal("a probe begun before a commit made the run fresh")
	}
	gen, _ = k.probeWanted("r")
	k.probeDone("r", gen, true)
	if _, ok, absent := k.lookup("r", attemptKey(recordPrefix, "r", "b", 1)); ok || !absent {
		t.Fatal("a probe with no commit meanwhile did not make the run fresh")
	}
	k.forget()
	if _, ok, absent := k.lookup("r", attemptKey(recordPrefix, "r", "b", 1)); ok || absent {
		t.Fatal("known still answers after forget")
	}
}

// A new attempt of a run the store has seen is proved new from memory,
// without reading Pebble; an attempt recorded by an earlier incarnation
// is found after a reopen.
func TestKnownProvesNewAttempts(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "a", Attempt: 1}))
	if _, ok, absent := s.known.lookup("r", attemptKey(recordPrefix, "r", "b", 1)); ok || !absent {
		t.Fatalf("a new attempt of a fresh run: ok %v absent %v, want proved absent", ok, absent)
	}
	if a, ok, _ := s.known.lookup("r", attemptKey(recordPrefix, "r", "a", 1)); !ok || a.State != StateStarted {
		t.Fatalf("the attempt just started: %+v %v, want known started", a, ok)
	}
	must(t, s.Close())

	s, err = Open(dir, nil)
	must(t, err)
	defer s.Close()
	if a, ok, err := s.Lookup("r", "a", 1); err != nil || !ok || a.State != StateStarted {
		t.Fatalf("after reopen, Lookup of the earlier incarnation's attempt = %+v, %v, %v", a, ok, err)
	}
	if _, fresh := s.known.fresh["r"]; fresh {
		t.Fatal("a run with records from an earlier incarnation is taken as fresh")
	}
	if _, ok, _ := s.Lookup("r", "b", 1); ok {
		t.Fatal("found an attempt never recorded")
	}
}

// Lookups racing with commits of the same run never miss a record whose
// commit had returned: a run probed while its records are being written
// is not taken as fresh unless the probe saw them all.
func TestKnownRacingProbe(t *testing.T) {
	s := open(t, t.TempDir())
	const runs, steps = 20, 30
	var prober, writers sync.WaitGroup
	done := make(chan struct{})
	prober.Go(func() { // looks up attempts never recorded, probing each run
		rng := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-done:
				return
			default:
			}
			run := fmt.Sprintf("run%d", rng.IntN(runs))
			if _, ok, err := s.Lookup(run, "never", 1); err != nil || ok {
				t.Errorf("Lookup of an attempt never recorded = %v, %v", ok, err)
				return
			}
		}
	})
	for w := range 2 {
		writers.Go(func() {
			for i := range runs * steps / 2 {
				run, step := fmt.Sprintf("run%d", i%runs), fmt.Sprintf("s%d-%d", w, i)
				if err := s.MarkStarted(Attempt{Run: run, Step: step, Attempt: 1}); err != nil {
					t.Error(err)
					return
				}
				if _, ok, err := s.Lookup(run, step, 1); err != nil || !ok {
					t.Errorf("Lookup(%s/%s) after MarkStarted returned = %v, %v", run, step, ok, err)
					return
				}
			}
		})
	}
	writers.Wait()
	close(done)
	prober.Wait()
	for r := range runs {
		for w := range 2 {
			for i := r; i < runs*steps/2; i += runs {
				if _, ok, err := s.Lookup(fmt.Sprintf("run%d", r), fmt.Sprintf("s%d-%d", w, i), 1); err != nil || !ok {
					t.Fatalf("run%d/s%d-%d not found at the end: %v, %v", r, w, i, ok, err)
				}
			}
		}
	}
}

// BenchmarkLookupNew is the executor's check of a new assignment: Lookup
// of an attempt never recorded, in a run with many recorded ones, in a
// store whose records are in several flushed tables.
func BenchmarkLookupNew(b *testing.B) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for t := range 8 {
		for i := range 100 {
			a := Attempt{Run: "r", Step: fmt.Sprintf("done%d-%d", t, i), Attempt: 1}
			if err := s.MarkStarted(a); err != nil {
				b.Fatal(err)
			}
			if err := s.MarkFinishedAll(a); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.mu.db.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		i++
		if _, ok, err := s.Lookup("r", fmt.Sprintf("new%d", i), 1); err != nil || ok {
			b.Fatal(ok, err)
		}
	}
}
