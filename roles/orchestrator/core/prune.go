package core

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Pruning (docs/memory.md): the leader removes expired facts from every
// memory fold with memory.pruned, so that facts and their index stay
// bounded by the live facts. Expiry itself is judged on read; pruning
// only frees what no reader with a sane clock would see.

// PruneGrace is how long after the earliest fact expired the leader
// prunes: readers whose clocks are a little behind still see it, and
// facts that expire close together go in one memory.pruned.
const PruneGrace = time.Minute

// KindPrune is memory.pruned's decision kind. Its key's Policy field
// holds the earliest expiry it prunes (Unix nanoseconds), so that a
// pruning in flight is not made again and the next one has a key of its
// own.
const KindPrune DecisionKind = "prune"

// Expiries is what the leader reads of its memory fold to prune it.
type Expiries interface {
	// NextExpiry returns the earliest expiry among the facts, false when
	// no fact expires.
	NextExpiry() (time.Time, bool)
}

// prune emits memory.pruned once the earliest expiry is PruneGrace old,
// or wakes Decide then.
func (d *decider) prune() {
	ex, ok := d.facts.(Expiries)
	if !ok {
		return
	}
	next, ok := ex.NextExpiry()
	if !ok {
		return
	}
	if due := next.Add(PruneGrace); d.now.Before(due) {
		d.wakeAt(due)
		return
	}
	d.emit(DecisionKey{Kind: KindPrune, Policy: next.UnixNano()}, event.MemoryPruned, "", "",
		event.MemoryPrunedData{Decision: d.decision(), Before: d.now.Add(-PruneGrace)})
}
