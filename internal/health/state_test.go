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

// Clear passes like Set(nil), even for a failure no probe saw yet, and
// keeps its reason until the check fails again or heals by itself.
func TestStateClearKeepsItsReason(t *testing.T) {
	ctx := context.Background()
	var s State
	drift := errors.New("stream drifted")
	s.Set(drift)
	ch := s.Changed()
	s.Clear("restored")
	select {
	case <-ch:
	default:
		t.Fatal("Clear did not close Changed")
	}
	if err := s.Probe(ctx); !errors.Is(err, drift) {
		t.Fatalf("first probe after fail+clear: %v, want %v", err, drift)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("second probe: %v, want pass", err)
	}
	if got := s.ClearReason(); got != "restored" {
		t.Fatalf("ClearReason after Clear = %q, want restored", got)
	}
	s.Set(nil) // compared again, still fine
	if got := s.ClearReason(); got != "restored" {
		t.Fatalf("ClearReason after a pass while passing = %q, want restored", got)
	}
	s.Set(drift)
	if got := s.ClearReason(); got != "" {
		t.Fatalf("ClearReason while failing = %q, want none", got)
	}
	s.Set(nil)
	if got := s.ClearReason(); got != "" {
		t.Fatalf("ClearReason after the cause went away = %q, want none", got)
	}
}
