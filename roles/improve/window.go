package improve

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
)

// Ledger is what the loop reads its telemetry window from (a
// *ledger.Store): the position of a time (its x/ index), the events from
// a position on, and the records of one run.
type Ledger interface {
	SeqAtTime(t time.Time) (uint64, error)
	ScanEvents(from uint64) iter.Seq2[event.Event, error]
	ScanRun(run string, from uint64) iter.Seq2[ledger.Record, error]
}

// maxEarlier bounds the events of one run read from before the window
// (its goal, plan and assignments come first).
const maxEarlier = 10_000

// ReadWindow reads the window before now from the ledger into a new
// Telemetry: the records from the first position at or after now-window
// (SeqAtTime) up to upto (0: the head), trimmed to the window. A run that
// started before the window is known by its own earlier events (its
// family, steps and commands; no record of them). Nothing of it stays
// anywhere once the caller drops it.
func ReadWindow(ctx context.Context, lg Ledger, window time.Duration, now time.Time, upto uint64) (*Telemetry, error) {
	t := NewTelemetry(window, 0)
	from, err := lg.SeqAtTime(now.Add(-t.Window))
	if err != nil {
		return nil, fmt.Errorf("improve: read the window: %w", err)
	}
	if _, err := readInto(ctx, lg, t, from, upto); err != nil {
		return nil, err
	}
	t.Trim(now)
	return t, nil
}

// readInto folds the ledger's records from position from up to upto (0:
// the head) into t, the runs it did not see start resolved by their
// earlier events, and returns the last position folded (from-1 when
// none).
func readInto(ctx context.Context, lg Ledger, t *Telemetry, from, upto uint64) (uint64, error) {
	t.earlier = func(run string) []event.Event { return earlierOf(lg, run, from) }
	defer func() { t.earlier = nil }()
	last := from - 1
	n := 0
	for ev, err := range lg.ScanEvents(from) {
		if err != nil {
			return last, fmt.Errorf("improve: read the window from position %d: %w", from, err)
		}
		if upto > 0 && ev.Seq > upto {
			break
		}
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return last, fmt.Errorf("improve: read the window: %w", ctx.Err())
		}
		last = ev.Seq
		if telemetryType(ev.Type) {
			t.Fold(ev)
		}
	}
	return last, nil
}

// earlierOf is the events of run before position before that say what
// the run is (its goal, plans and assignments), at most maxEarlier read.
func earlierOf(lg Ledger, run string, before uint64) []event.Event {
	var out []event.Event
	n := 0
	for rec, err := range lg.ScanRun(run, 0) {
		if err != nil || rec.Event.Seq >= before || n >= maxEarlier {
			break
		}
		n++
		switch rec.Event.Type {
		case event.GoalSubmitted, event.PlanProposed, event.TaskAssigned:
			out = append(out, rec.Event)
		}
	}
	return out
}

// watched is an applied proposal the monitor counts attempts for.
type watched struct {
	// p holds what Affects reads (pattern, family, subject).
	p   *Proposal
	seq uint64
}

// watch is what the leader keeps to monitor applied proposals: the
// attempts after each one's proposal.applied that it touched (Affects),
// read from the ledger, and where it stopped reading. It holds nothing
// while no proposal is applied.
type watch struct {
	tel   *Telemetry
	ids   map[string]watched
	start uint64 // the first position read
	next  uint64 // the next position to read
}

// affects reports whether a is an attempt after one of the watched
// proposals that it touched.
func (w *watch) affects(a *Attempt) bool {
	for _, p := range w.ids {
		if a.Seq > p.seq && Affects(p.p, a) {
			return true
		}
	}
	return false
}

// appliedOf returns the proposals of st that are applied.
func appliedOf(st *State) map[string]watched {
	out := map[string]watched{}
	for _, id := range st.Order {
		if p := st.Proposals[id]; p.Status == StatusApplied && p.AppliedSeq > 0 {
			w := &Proposal{}
			w.Pattern, w.Family, w.Subject = p.Pattern, p.Family, p.Subject
			out[id] = watched{p: w, seq: p.AppliedSeq}
		}
	}
	return out
}

// watchLocked (tm held) brings the watch up to upto, the last position
// the state folded: read from the ledger the first time (after a restart
// or a leader change: from the first applied proposal's position on),
// then what came since. It drops the watch when no proposal is applied.
func (l *Loop) watchLocked(ctx context.Context, ids map[string]watched, upto uint64, now time.Time) error {
	if len(ids) == 0 {
		l.tm.watch = nil
		return nil
	}
	w := l.tm.watch
	first := uint64(0)
	for _, p := range ids {
		if first == 0 || p.seq+1 < first {
			first = p.seq + 1
		}
	}
	if w == nil || first < w.start {
		w = &watch{start: first, next: first}
		w.tel = NewTelemetry(l.cfg.Monitor.MaxWatch, 0)
		w.tel.keep = w.affects
	}
	changed := len(ids) != len(w.ids)
	for id := range ids {
		if _, ok := w.ids[id]; !ok {
			changed = true
		}
	}
	w.ids = ids
	if changed && len(w.tel.Attempts) > 0 {
		kept := w.tel.Attempts[:0]
		for i := range w.tel.Attempts {
			if w.affects(&w.tel.Attempts[i]) {
				kept = append(kept, w.tel.Attempts[i])
			}
		}
		w.tel.Attempts = kept
	}
	l.tm.watch = w
	if upto < w.next {
		return nil
	}
	last, err := readInto(ctx, l.cfg.Ledger, w.tel, w.next, upto)
	w.next = last + 1
	// Runs nothing was heard of in MaxWatch, and attempts older than it
	// (past it, a proposal is judged without them), go.
	w.tel.Trim(now)
	if err != nil {
		return fmt.Errorf("improve: monitor: %w", err)
	}
	return nil
}

var _ Ledger = (*ledger.Store)(nil)
