package core

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

// TestPruneExpiredFacts: the leader prunes once the earliest expiry is
// PruneGrace old (waking Decide then, not before), one memory.pruned per
// expiry while it is in flight, and nothing once no fact expires.
func TestPruneExpiredFacts(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mem := memory.New()
	put := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Key: "k", Value: "v", TTL: event.Duration(time.Minute)})
	mem.Fold(event.Event{ID: put.ID, Seq: 1, Type: event.MemoryPut, Time: t0, Data: put.Data})
	s := NewState()
	opts := Options{Facts: mem}
	// DecideWith keeps only the prunings (a state without a policy also
	// records the first one).
	DecideWith := func(s *State, now time.Time, epoch uint64, inflight map[DecisionKey]bool, opts Options) ([]Decision, time.Time) {
		all, wake := DecideWith(s, now, epoch, inflight, opts)
		var out []Decision
		for _, d := range all {
			if d.Draft.Type == event.MemoryPruned {
				out = append(out, d)
			}
		}
		return out, wake
	}

	out, wake := DecideWith(s, t0.Add(time.Minute), 1, nil, opts)
	if len(out) != 0 || !wake.Equal(t0.Add(time.Minute+PruneGrace)) {
		t.Fatalf("before the grace: %d decisions, wake %v", len(out), wake)
	}
	at := t0.Add(time.Minute + PruneGrace)
	out, _ = DecideWith(s, at, 1, nil, opts)
	if len(out) != 1 || out[0].Draft.Type != event.MemoryPruned {
		t.Fatalf("after the grace: %+v", out)
	}
	var d event.MemoryPrunedData
	ev := event.Event{Type: event.MemoryPruned, Time: at, Seq: 2, Data: out[0].Draft.Data}
	if err := ev.Decode(&d); err != nil || !d.Before.Equal(at.Add(-PruneGrace)) || d.Epoch != 1 {
		t.Fatalf("memory.pruned = %+v %v", d, err)
	}
	if again, _ := DecideWith(s, at, 1, map[DecisionKey]bool{out[0].Key: true}, opts); len(again) != 0 {
		t.Fatalf("a pruning in flight was made again: %+v", again)
	}
	mem.Fold(ev)
	if _, ok := mem.NextExpiry(); ok {
		t.Fatal("the fact survived the pruning")
	}
	if out, wake := DecideWith(s, at.Add(time.Hour), 1, nil, opts); len(out) != 0 || !wake.IsZero() {
		t.Fatalf("nothing to prune: %+v, wake %v", out, wake)
	}
}
