package executor

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// Stop with assignments accepted but not started (queued behind the one
// slot) starts none of them and returns within its deadline, killing the
// running step; the queued ones are given back to the server, and after a
// restart every one of them runs.
func TestStopStartsNothingFetched(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	held := []string{"b", "c", "d"}
	short := func(c *Config) { c.Slots = 1; c.Queue = len(held); c.ackWait = 2 * time.Second }
	ex := h.start("n1", state, rec, short)
	h.assign("n1", "r1", "long", 0, "sleep 30")
	poll.Eventually(t, 10*time.Second, "long started", func() bool { return rec.started("long") })
	for _, s := range held {
		h.assign("n1", "r1", s, 0, "")
	}
	poll.Eventually(t, 10*time.Second, "b, c and d queued and unacknowledged", func() bool {
		info := h.consumerInfo("n1")
		return info.NumPending == 0 && info.NumAckPending == len(held) && ex.Stats().Queued == len(held)
	})

	const grace = time.Second
	began := time.Now()
	if err := h.stop(ex, grace); err != nil {
		t.Fatal(err)
	}
	// The kill takes the runner's KillGrace (200ms) at most, plus reporting.
	if took := time.Since(began); took > grace+1500*time.Millisecond {
		t.Fatalf("Stop took %v with a %v deadline", took, grace)
	}
	for _, s := range held {
		if h.ran(s) || rec.started(s) {
			t.Errorf("%s was started during Stop", s)
		}
	}
	if got := ex.Stats().Held; got != uint64(len(held)) {
		t.Errorf("Stats().Held = %d, want the %d queued assignments", got, len(held))
	}
	fin := rec.finished("long")
	if len(fin) != 1 || !fin[0].Interrupted || fin[0].Class != event.ClassTransient || !strings.HasPrefix(fin[0].Error, event.LegacyInterruptedPrefix) {
		t.Fatalf("long reports = %+v, want one interrupted", fin)
	}

	// Nothing is lost: the next start runs them (redelivered).
	ex = h.start("n1", state, rec, func(c *Config) { short(c); c.Slots = 3 })
	poll.Eventually(t, 15*time.Second, "b, c and d ran after the restart", func() bool {
		return h.ran("b") && h.ran("c") && h.ran("d")
	})
	if n := len(rec.finished("long")); n != 1 {
		t.Errorf("long reported %d times, want once", n)
	}
}

// A Stop while the executor is idle returns at once, and Stop is
// idempotent.
func TestStopIdle(t *testing.T) {
	h := newHarness(t)
	ex := h.start("n1", t.TempDir(), &recorder{}, nil)
	began := time.Now()
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("idle Stop took %v", took)
	}
}
