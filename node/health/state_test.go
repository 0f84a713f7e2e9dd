package health

import (
	"context"
	"errors"
	"testing"
)

func TestStateReportsAFailureHealedBeforeAProbe(t *testing.T) {
	var s State
	if err := s.Probe(context.Background()); err != nil {
		t.Fatalf("zero State: %v, want pass", err)
	}
	ch := s.Changed()
	gone := errors.New("consumer gone")
	s.Set(gone)
	select {
	case <-ch:
	default:
		t.Fatal("Set did not close Changed")
	}
	s.Set(nil)
	if err := s.Probe(context.Background()); !errors.Is(err, gone) {
		t.Fatalf("first probe after fail+heal: %v, want %v", err, gone)
	}
	if err := s.Probe(context.Background()); err != nil {
		t.Fatalf("second probe: %v, want pass", err)
	}
	// A failure a probe has seen is not reported again once healed.
	s.Set(gone)
	if err := s.Probe(context.Background()); !errors.Is(err, gone) {
		t.Fatalf("probe while failing: %v", err)
	}
	s.Set(nil)
	if err := s.Probe(context.Background()); err != nil {
		t.Fatalf("probe after a seen failure healed: %v, want pass", err)
	}
	other := errors.New("other")
	s.Set(gone)
	s.Set(other)
	if err := s.Probe(context.Background()); !errors.Is(err, other) {
		t.Fatalf("probe while failing: %v, want the present failure", err)
	}
}
