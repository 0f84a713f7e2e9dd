package localstate

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStartedFinishedLookup(t *testing.T) {
	s := open(t, t.TempDir())
	started := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if _, ok, err := s.Lookup("r1", "build", 1); err != nil || ok {
		t.Fatalf("Lookup before start = ok %v, err %v; want absent", ok, err)
	}
	if err := s.MarkStarted(Attempt{Run: "r1", Step: "build", Attempt: 1, Started: started, PID: 4242}); err != nil {
		t.Fatal(err)
	}
	a, ok, err := s.Lookup("r1", "build", 1)
	if err != nil || !ok {
		t.Fatalf("Lookup after start = ok %v, err %v", ok, err)
	}
	want := Attempt{Run: "r1", Step: "build", Attempt: 1, State: StateStarted, Started: started, PID: 4242}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("Lookup = %+v, want %+v", a, want)
	}
	if err := s.MarkFinished("r1", "build", 1); err != nil {
		t.Fatal(err)
	}
	a, _, _ = s.Lookup("r1", "build", 1)
	if a.State != StateFinished || a.Finished.IsZero() || a.PID != 4242 || !a.Started.Equal(started) {
		t.Fatalf("after MarkFinished = %+v", a)
	}
	// Idempotent.
	if err := s.MarkFinished("r1", "build", 1); err != nil {
		t.Fatalf("second MarkFinished: %v", err)
	}
	// Attempts are distinct by number.
	if _, ok, _ := s.Lookup("r1", "build", 2); ok {
		t.Fatal("attempt 2 found, only 1 was started")
	}
}

func TestStateMovesForwardOnly(t *testing.T) {
	s := open(t, t.TempDir())
	if err := s.MarkFinished("r", "s", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MarkFinished of unknown attempt = %v, want ErrNotFound", err)
	}
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "s", Attempt: 1, PID: 1}))
	// Restarting a started attempt overwrites it.
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "s", Attempt: 1, PID: 2}))
	a, _, _ := s.Lookup("r", "s", 1)
	if a.PID != 2 || a.Started.IsZero() {
		t.Fatalf("restarted attempt = %+v, want PID 2 and a start time", a)
	}
	must(t, s.MarkFinished("r", "s", 1))
	if err := s.MarkStarted(Attempt{Run: "r", Step: "s", Attempt: 1}); !errors.Is(err, ErrFinished) {
		t.Fatalf("MarkStarted of finished attempt = %v, want ErrFinished", err)
	}
	if a, _, _ := s.Lookup("r", "s", 1); a.State != StateFinished {
		t.Fatalf("state regressed to %q", a.State)
	}
}

func TestInvalidIDs(t *testing.T) {
	s := open(t, t.TempDir())
	for _, a := range []Attempt{
		{Run: "", Step: "s", Attempt: 1},
		{Run: "r", Step: "", Attempt: 1},
		{Run: "r\x00x", Step: "s", Attempt: 1},
		{Run: "r", Step: "s\x00", Attempt: 1},
		{Run: "r", Step: "s", Attempt: -1},
	} {
		if err := s.MarkStarted(a); !errors.Is(err, ErrInvalid) {
			t.Errorf("MarkStarted(%+v) = %v, want ErrInvalid", a, err)
		}
		if err := s.MarkFinished(a.Run, a.Step, a.Attempt); !errors.Is(err, ErrInvalid) {
			t.Errorf("MarkFinished(%+v) = %v, want ErrInvalid", a, err)
		}
		if _, _, err := s.Lookup(a.Run, a.Step, a.Attempt); !errors.Is(err, ErrInvalid) {
			t.Errorf("Lookup(%+v) = %v, want ErrInvalid", a, err)
		}
	}
}

// Keys must not collide when ids share prefixes ("r1"+"0/x" vs "r10"+"/x").
func TestKeysDoNotCollide(t *testing.T) {
	s := open(t, t.TempDir())
	must(t, s.MarkStarted(Attempt{Run: "r1", Step: "0s", Attempt: 1, PID: 1}))
	must(t, s.MarkStarted(Attempt{Run: "r10", Step: "s", Attempt: 1, PID: 2}))
	must(t, s.MarkStarted(Attempt{Run: "r1", Step: "0s", Attempt: 256, PID: 3}))
	for _, c := range []struct {
		run, step string
		attempt   int
		pid       int
	}{{"r1", "0s", 1, 1}, {"r10", "s", 1, 2}, {"r1", "0s", 256, 3}} {
		a, ok, err := s.Lookup(c.run, c.step, c.attempt)
		if err != nil || !ok || a.PID != c.pid {
			t.Errorf("Lookup(%s,%s,%d) = %+v ok=%v err=%v, want PID %d", c.run, c.step, c.attempt, a, ok, err, c.pid)
		}
	}
}

func TestUnfinishedSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	for i := 1; i <= 3; i++ {
		must(t, s.MarkStarted(Attempt{Run: "run-b", Step: fmt.Sprintf("s%d", i), Attempt: 1, PID: 100 + i}))
	}
	must(t, s.MarkStarted(Attempt{Run: "run-a", Step: "x", Attempt: 2, PID: 99}))
	must(t, s.MarkFinished("run-b", "s2", 1))
	must(t, s.Close())
	must(t, s.Close()) // idempotent
	if err := s.MarkStarted(Attempt{Run: "r", Step: "s", Attempt: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("MarkStarted after Close = %v, want ErrClosed", err)
	}

	s = open(t, dir)
	got, err := s.Unfinished()
	must(t, err)
	var ids []string
	for _, a := range got {
		if a.State != StateStarted {
			t.Errorf("unfinished %+v has state %q", a, a.State)
		}
		ids = append(ids, fmt.Sprintf("%s/%s/%d/%d", a.Run, a.Step, a.Attempt, a.PID))
	}
	want := []string{"run-a/x/2/99", "run-b/s1/1/101", "run-b/s3/1/103"}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("Unfinished after reopen = %v, want %v", ids, want)
	}
	if a, ok, _ := s.Lookup("run-b", "s2", 1); !ok || a.State != StateFinished {
		t.Fatalf("finished attempt after reopen = %+v ok=%v", a, ok)
	}
	must(t, s.MarkFinished("run-a", "x", 2))
	got, err = s.Unfinished()
	must(t, err)
	if len(got) != 2 {
		t.Fatalf("Unfinished after finishing one = %d attempts, want 2", len(got))
	}
}

func TestPrune(t *testing.T) {
	s := open(t, t.TempDir())
	old := time.Now().Add(-48 * time.Hour)
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "old-done", Attempt: 1, Started: old}))
	must(t, s.MarkFinished("r", "old-done", 1))
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "old-open", Attempt: 1, Started: old}))
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "new-done", Attempt: 1}))
	must(t, s.MarkFinished("r", "new-done", 1))
	n, err := s.Prune(time.Now().Add(-24 * time.Hour))
	must(t, err)
	if n != 1 {
		t.Fatalf("Prune deleted %d, want 1", n)
	}
	for step, want := range map[string]bool{"old-done": false, "old-open": true, "new-done": true} {
		if _, ok, _ := s.Lookup("r", step, 1); ok != want {
			t.Errorf("after Prune, %s present = %v, want %v", step, ok, want)
		}
	}
}

func TestConcurrentWriters(t *testing.T) {
	s := open(t, t.TempDir())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 8 {
		wg.Go(func() {
			for i := range 5 {
				step := fmt.Sprintf("w%d-%d", w, i)
				if err := s.MarkStarted(Attempt{Run: "r", Step: step, Attempt: 1}); err != nil {
					errs <- err
					return
				}
				if i%2 == 0 {
					if err := s.MarkFinished("r", step, 1); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.Unfinished()
	must(t, err)
	if len(got) != 8*2 {
		t.Fatalf("Unfinished = %d attempts, want 16", len(got))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A dropped attempt (cancelled before it started) is remembered across a
// reopen and never starts; a drop leaves an attempt already recorded as it
// is, so it never hides one that may have run.
func TestMarkDropped(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "running", Attempt: 1, PID: 7}))
	must(t, s.MarkStarted(Attempt{Run: "r", Step: "done", Attempt: 1}))
	must(t, s.MarkFinished("r", "done", 1))
	must(t, s.MarkDropped(Attempt{Run: "r", Step: "queued", Attempt: 2}, Attempt{Run: "r", Step: "running", Attempt: 1}, Attempt{Run: "r", Step: "done", Attempt: 1}))
	must(t, s.MarkDropped(Attempt{Run: "r", Step: "queued", Attempt: 2})) // idempotent
	if err := s.MarkDropped(Attempt{Run: "", Step: "x", Attempt: 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("MarkDropped with an empty run = %v, want ErrInvalid", err)
	}
	must(t, s.Close())

	s = open(t, dir)
	a, ok, err := s.Lookup("r", "queued", 2)
	if err != nil || !ok || a.State != StateDropped || a.Finished.IsZero() {
		t.Fatalf("dropped attempt after reopen = %+v ok=%v err=%v, want state dropped", a, ok, err)
	}
	if err := s.MarkStarted(Attempt{Run: "r", Step: "queued", Attempt: 2}); !errors.Is(err, ErrDropped) {
		t.Fatalf("MarkStarted of a dropped attempt = %v, want ErrDropped", err)
	}
	must(t, s.MarkFinished("r", "queued", 2)) // nothing to finish; no error
	if a, _, _ := s.Lookup("r", "queued", 2); a.State != StateDropped {
		t.Fatalf("MarkFinished changed a dropped attempt to %q", a.State)
	}
	if a, _, _ := s.Lookup("r", "running", 1); a.State != StateStarted || a.PID != 7 {
		t.Fatalf("a drop changed a started attempt: %+v", a)
	}
	if a, _, _ := s.Lookup("r", "done", 1); a.State != StateFinished {
		t.Fatalf("a drop changed a finished attempt: %+v", a)
	}
	left, err := s.Unfinished()
	must(t, err)
	if len(left) != 1 || left[0].Step != "running" {
		t.Fatalf("Unfinished = %+v, want only the started attempt", left)
	}
	n, err := s.Prune(time.Now().Add(time.Hour))
	must(t, err)
	if n != 2 {
		t.Fatalf("Prune deleted %d, want 2 (the finished and the dropped attempt)", n)
	}
	if _, ok, _ := s.Lookup("r", "queued", 2); ok {
		t.Fatal("the dropped attempt survived Prune")
	}
}

// Forget deletes a started record for good (across a reopen), so the
// attempt may be recorded started again; it never undoes a finish or a
// drop.
func TestForget(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	a := Attempt{Run: "r1", Step: "s", Attempt: 1}
	fin := Attempt{Run: "r1", Step: "f", Attempt: 1}
	drop := Attempt{Run: "r1", Step: "d", Attempt: 1}
	if err := s.MarkStarted(a, fin); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFinishedAll(fin); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDropped(drop); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(a, fin, drop, Attempt{Run: "r1", Step: "never", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		if _, ok, err := s.Lookup("r1", "s", 1); err != nil || ok {
			t.Fatalf("forgotten attempt: found %v, err %v", ok, err)
		}
		if rec, _, _ := s.Lookup("r1", "f", 1); rec.State != StateFinished {
			t.Fatalf("finished attempt after Forget: %+v", rec)
		}
		if rec, _, _ := s.Lookup("r1", "d", 1); rec.State != StateDropped {
			t.Fatalf("dropped attempt after Forget: %+v", rec)
		}
		if u, err := s.Unfinished(); err != nil || len(u) != 0 {
			t.Fatalf("Unfinished after Forget = %+v, %v", u, err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	check(s)
	if err := s.MarkStarted(a); err != nil {
		t.Fatalf("MarkStarted after Forget: %v", err)
	}
	if rec, ok, _ := s.Lookup("r1", "s", 1); !ok || rec.State != StateStarted {
		t.Fatalf("started again after Forget: %+v %v", rec, ok)
	}
}
