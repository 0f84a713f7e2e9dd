package core

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestSecondElectionAtTheSameEpochIsNotAccepted: the fold accepts an
// election only above the epoch in force, so two winners at one epoch
// never both lead: the first one recorded does.
func TestSecondElectionAtTheSameEpochIsNotAccepted(t *testing.T) {
	var l ledger
	s := policied()
	elect := func(epoch uint64, leader string) {
		s.Apply(l.add(event.LeaderElected, "", leader, t0, event.LeaderElectedData{Decision: event.Decision{Epoch: epoch}, Leader: leader}))
	}
	elect(1, "a")
	elect(1, "b")
	if s.Epoch != 1 || s.Leader != "a" || s.Ignored != 1 || s.Fenced != 0 {
		t.Fatalf("after a second election at 1: epoch %d leader %s ignored %d fenced %d", s.Epoch, s.Leader, s.Ignored, s.Fenced)
	}
	elect(2, "b")
	elect(1, "c")
	if s.Epoch != 2 || s.Leader != "b" || s.Ignored != 1 || s.Fenced != 1 {
		t.Fatalf("after elections at 2 then 1: epoch %d leader %s ignored %d fenced %d", s.Epoch, s.Leader, s.Ignored, s.Fenced)
	}
}
