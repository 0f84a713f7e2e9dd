package localstate

import (
	"errors"
	"testing"
)

// The consumer position and the completed drain survive a reopen; before
// any is recorded there is none.
func TestPositionAndDrainedSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	must(t, err)
	if _, ok, err := s.Position(); err != nil || ok {
		t.Fatalf("Position of a new store = ok %v, err %v; want none", ok, err)
	}
	if d, err := s.Drained(); err != nil || d != 0 {
		t.Fatalf("Drained of a new store = %d, %v; want 0", d, err)
	}
	must(t, s.SetPosition(41))
	must(t, s.SetPosition(42))
	must(t, s.MarkDrained(17))
	must(t, s.Close())
	if err := s.SetPosition(43); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetPosition after Close = %v, want ErrClosed", err)
	}

	s = open(t, dir)
	if p, ok, err := s.Position(); err != nil || !ok || p != 42 {
		t.Fatalf("Position after reopen = %d, %v, %v; want 42", p, ok, err)
	}
	if d, err := s.Drained(); err != nil || d != 17 {
		t.Fatalf("Drained after reopen = %d, %v; want 17", d, err)
	}
}
