package executor

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// drainedNow reports whether ex's drain has completed.
func drainedNow(ex *Executor) bool {
	select {
	case <-ex.Drained():
		return true
	default:
		return false
	}
}

// A node.drain for this node: nothing more starts — neither what was
// queued nor what arrives later — what runs finishes, then Drained closes.
// A drain for another node changes nothing. The drain is the incarnation's:
// after a restart the node serves again and runs what it had queued.
func TestDrain(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	cfg := func(c *Config) { c.Slots = 1; c.Queue = 2 }
	ex := h.start("n1", state, rec, cfg)
	h.drain("n2", "not this one")
	h.assign("n1", "r1", "a", 0, h.gate("a"))
	poll.Eventually(t, 10*time.Second, "a started", func() bool { return h.ran("a") })
	h.assign("n1", "r1", "b", 0, "")
	poll.Eventually(t, 10*time.Second, "b queued", func() bool { return ex.Stats().Queued == 1 })
	if ex.Stats().Draining {
		t.Fatal("draining after a drain for another node")
	}
	h.drain("n1", "kernel upgrade")
	poll.Eventually(t, 10*time.Second, "drain read", func() bool { return ex.Stats().Draining })
	h.assign("n1", "r1", "c", 0, "")
	h.assignNoop("n1", "r1", "n", 0)
	poll.Eventually(t, 10*time.Second, "c and n queued", func() bool { return ex.Stats().Queued == 2 })
	if drainedNow(ex) {
		t.Fatal("drained while a runs")
	}
	h.release("a")
	poll.Eventually(t, 10*time.Second, "drained once a finished", func() bool { return drainedNow(ex) })
	if f := rec.finished("a"); len(f) != 1 || f[0].Status != event.TaskSucceeded {
		t.Fatalf("a reports %+v, want it finished and reported before the drain completed", f)
	}
	for _, s := range []string{"b", "c", "n"} {
		if h.ran(s) || rec.started(s) {
			t.Errorf("%s started during a drain", s)
		}
	}
	// The drain was acknowledged; the queued assignments were not.
	if info := h.consumerInfo("n1"); info.NumAckPending != 3 {
		t.Fatalf("%d messages unacknowledged, want the 3 queued assignments", info.NumAckPending)
	}
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	ex = h.start("n1", state, rec, cfg)
	poll.Eventually(t, 10*time.Second, "b, c and n ran after the restart", func() bool {
		return h.ran("b") && h.ran("c") && len(rec.finished("n")) == 1
	})
	if st := ex.Stats(); st.Draining {
		t.Fatalf("Stats %+v: draining again after a restart that followed a completed drain", st)
	}
}

// A drain interrupted by a stop (an attempt still running) is delivered
// again to the next incarnation, which honours it.
func TestDrainSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	ex := h.start("n1", state, rec, nil)
	h.assign("n1", "r1", "a", 0, "sleep 30")
	poll.Eventually(t, 10*time.Second, "a started", func() bool { return rec.started("a") })
	h.drain("n1", "maintenance")
	poll.Eventually(t, 10*time.Second, "drain read", func() bool { return ex.Stats().Draining })
	if err := h.stop(ex, 200*time.Millisecond); err != nil { // a is killed, reported interrupted
		t.Fatal(err)
	}
	if drainedNow(ex) {
		t.Fatal("the drain completed although a was killed by the stop")
	}
	h.assign("n1", "r1", "b", 0, "")
	ex = h.start("n1", state, rec, nil)
	poll.Eventually(t, 10*time.Second, "the drain honoured again", func() bool { return drainedNow(ex) })
	if !ex.Stats().Draining {
		t.Fatal("not draining")
	}
	if h.ran("b") || rec.started("b") {
		t.Fatal("b started by a node that was draining")
	}
}
