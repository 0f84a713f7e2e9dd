package executor

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
)

// With every slot busy, attempts queued and more refused, a cancel and a
// leader election behind them are acted on at once: the running attempt,
// which would run for 30s, ends cancelled; the queued ones then start in
// arrival order; a cancelled queued attempt never starts.
func TestCancelNotBlockedByBusySlots(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, func(c *Config) { c.Slots = 1; c.Queue = 2 })
	h.assign("n1", "r1", "a", 0, "sleep 30")
	poll.Eventually(t, 10*time.Second, "a started", func() bool { return rec.started("a") })
	for _, s := range []string{"b", "c", "d", "e"} {
		h.assign("n1", "r1", s, 0, h.gate(s))
	}
	poll.Eventually(t, 10*time.Second, "b and c queued, d and e refused", func() bool {
		st := ex.Stats()
		return st.Queued == 2 && st.Refused >= 2
	})
	h.elect(7)
	poll.Eventually(t, 10*time.Second, "the election recorded while a runs", func() bool { return ex.Stats().Epoch == 7 })
	h.cancelAttempt("n1", "r1", "c", 1, 7, "superseded")
	h.cancel("n1", "r1", "a", 7)
	poll.Eventually(t, 10*time.Second, "a cancelled", func() bool { return len(rec.finished("a")) == 1 })
	if f := rec.finished("a")[0]; f.Status != event.TaskCancelled {
		t.Fatalf("a finished %s (%s), want cancelled: the cancel did not reach the running attempt", f.Status, f.Error)
	}
	poll.Eventually(t, 10*time.Second, "b started in a's slot", func() bool { return h.ran("b") })
	h.release("b")
	poll.Eventually(t, 15*time.Second, "d started after b", func() bool { return h.ran("d") })
	h.release("d")
	poll.Eventually(t, 15*time.Second, "e started after d", func() bool { return h.ran("e") })
	h.release("e")
	poll.Eventually(t, 10*time.Second, "b, d and e reported", func() bool {
		return len(rec.finished("b")) == 1 && len(rec.finished("d")) == 1 && len(rec.finished("e")) == 1
	})
	if h.ran("c") || rec.started("c") {
		t.Fatal("c, cancelled while queued, was started")
	}
	fc := rec.finished("c")
	if len(fc) != 1 || fc[0].Status != event.TaskCancelled || !strings.Contains(fc[0].Error, "superseded") {
		t.Fatalf("c reports = %+v, want one cancelled before it started (superseded)", fc)
	}
	// b, d and e started in arrival order.
	order := rec.startOrder()
	if i, j, k := slices.Index(order, "b"), slices.Index(order, "d"), slices.Index(order, "e"); !(i < j && j < k) {
		t.Fatalf("start order %v, want b before d before e", order)
	}
}

// The executor never runs more than Slots attempts nor queues more than
// Queue: assignments beyond Slots + Queue are given back to the server
// and taken when there is room; each attempt runs once.
func TestQueueDepthRespected(t *testing.T) {
	const slots, queue, n = 2, 1, 6
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, func(c *Config) { c.Slots = slots; c.Queue = queue })
	steps := make([]string, n)
	for i := range steps {
		steps[i] = fmt.Sprintf("q%d", i)
		h.assign("n1", "r1", steps[i], 0, h.gate(steps[i]))
	}
	check := func() {
		if st := ex.Stats(); st.Running > slots || st.Queued > queue {
			t.Fatalf("Stats %+v: more than %d running or %d queued", st, slots, queue)
		}
	}
	started := func() int {
		n := 0
		for _, s := range steps {
			if h.ran(s) {
				n++
			}
		}
		return n
	}
	poll.Eventually(t, 10*time.Second, "slots full, queue full, the rest refused", func() bool {
		check()
		if n := started(); n > slots {
			t.Fatalf("%d steps started, want %d", n, slots)
		}
		st := ex.Stats()
		return st.Running == slots && st.Queued == queue && st.Refused >= n-slots-queue && started() == slots
	})
	// Release them in order of start until every one ran.
	done := map[string]bool{}
	for len(done) < n {
		poll.Eventually(t, 15*time.Second, "another step started", func() bool {
			check()
			for _, s := range steps {
				if h.ran(s) && !done[s] {
					return true
				}
			}
			return false
		})
		for _, s := range steps {
			if h.ran(s) && !done[s] {
				done[s] = true
				h.release(s)
			}
		}
	}
	poll.Eventually(t, 15*time.Second, "every step reported", func() bool {
		check()
		for _, s := range steps {
			if len(rec.finished(s)) != 1 {
				return false
			}
		}
		return true
	})
	for _, s := range steps {
		if f := rec.finished(s); len(f) != 1 || f[0].Status != event.TaskSucceeded {
			t.Errorf("%s reports %+v, want one success", s, f)
		}
	}
}

// A queued attempt cancelled as superseded never starts, and neither does
// an assignment whose cancel came first; a replay of either, before or
// after a restart, is not run.
func TestSupersededQueuedAttemptNeverStarts(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	ex := h.start("n1", state, rec, func(c *Config) { c.Slots = 1; c.Queue = 1 })
	h.assign("n1", "r1", "a", 0, "sleep 30")
	poll.Eventually(t, 10*time.Second, "a started", func() bool { return rec.started("a") })
	h.assign("n1", "r1", "b", 0, "")
	poll.Eventually(t, 10*time.Second, "b queued", func() bool { return ex.Stats().Queued == 1 })
	h.cancelAttempt("n1", "r1", "b", 1, 0, "superseded")
	poll.Eventually(t, 10*time.Second, "b dropped and reported", func() bool { return len(rec.finished("b")) == 1 })
	if st := ex.Stats(); st.Dropped != 1 || st.Queued != 0 {
		t.Fatalf("Stats %+v, want 1 dropped and none queued", st)
	}
	// A cancel that arrives before its assignment.
	h.cancelAttempt("n1", "r1", "x", 1, 0, "superseded")
	h.assign("n1", "r1", "x", 0, "")
	h.cancel("n1", "r1", "a", 0)
	h.assign("n1", "r1", "b", 0, "") // replayed
	h.assign("n1", "r1", "after", 0, "")
	poll.Eventually(t, 10*time.Second, "after ran", func() bool { return h.ran("after") })
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	h.assign("n1", "r1", "b", 0, "")
	h.assign("n1", "r1", "x", 0, "")
	h.start("n1", state, rec, func(c *Config) { c.Slots = 1; c.Queue = 1 })
	h.assign("n1", "r1", "after2", 0, "")
	poll.Eventually(t, 10*time.Second, "after2 ran", func() bool { return h.ran("after2") })
	for _, s := range []string{"b", "x"} {
		if h.ran(s) || rec.started(s) {
			t.Errorf("%s ran after it was cancelled", s)
		}
	}
	if f := rec.finished("b"); len(f) != 1 || f[0].Status != event.TaskCancelled {
		t.Fatalf("b reports %+v, want the one cancellation", f)
	}
}

// A node back after a stop finds, behind an assignment it never started,
// the cancel that superseded it: it reads its consumer's backlog before
// starting anything, so the attempt never starts. Filler messages put the
// two in different deliveries.
func TestBacklogReadBeforeStarting(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	ex := h.start("n1", state, rec, nil)
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	h.assign("n1", "r1", "stale", 0, "")
	for range prefetch + 50 {
		h.elect(0) // delivered to the executor, changes nothing
	}
	h.cancelAttempt("n1", "r1", "stale", 1, 0, "superseded")
	h.assign("n1", "r1", "fresh", 0, "")
	ex = h.start("n1", state, rec, nil)
	poll.Eventually(t, 10*time.Second, "fresh ran", func() bool { return h.ran("fresh") && len(rec.finished("fresh")) == 1 })
	if h.ran("stale") || rec.started("stale") {
		t.Fatal("stale started before its cancel, which was in the backlog, was read")
	}
	if f := rec.finished("stale"); len(f) != 1 || f[0].Status != event.TaskCancelled {
		t.Fatalf("stale reports %+v, want one cancelled before it started", f)
	}
	if st := ex.Stats(); st.Dropped != 1 {
		t.Fatalf("Stats %+v, want stale dropped from the queue", st)
	}
}

// kill -STOP, simulated in process: the executor's consumer stops pulling
// and its loop is held (its mutex) past stallGap — while its step
// processes, not stopped, go on: one ends, freeing a slot. Meanwhile the
// leader supersedes the other running attempt and the queued one, and
// assigns another. On kill -CONT the loop must not start the queued
// attempt in the free slot before it has read the cancels still on the
// server: it notices the stall and reads its backlog first. Then the
// superseded running attempt's process is killed and its late result
// reported cancelled, the queued one never starts, the new one runs.
func TestStoppedExecutorReadsBacklogAndKillsSuperseded(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, func(c *Config) { c.Slots = 2; c.Queue = 1 })
	h.assign("n1", "r1", "long", 0, "sleep 30")
	h.assign("n1", "r1", "short", 0, h.gate("short"))
	poll.Eventually(t, 10*time.Second, "long and short started", func() bool { return rec.started("long") && h.ran("short") })
	h.assign("n1", "r1", "b", 0, "")
	poll.Eventually(t, 10*time.Second, "b queued", func() bool { return ex.Stats().Queued == 1 })

	// kill -STOP: no pulling, no loop.
	ex.mu.Lock()
	cc, cons := ex.mu.consume, ex.mu.cons
	ex.mu.Unlock()
	cc.Stop()
	<-cc.Closed()
	ex.mu.Lock()
	stopped := time.Now()
	h.release("short") // its process ends while the executor is stopped
	h.cancelAttempt("n1", "r1", "long", 1, 0, "superseded")
	h.cancelAttempt("n1", "r1", "b", 1, 0, "superseded")
	h.assign("n1", "r1", "c", 0, "")
	err := poll.Wait(10*time.Second, func() bool { return time.Since(stopped) > stallGap })
	ex.mu.Unlock() // kill -CONT: the loop runs, short's slot frees
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the stall noticed", func() bool { return ex.Stats().Stalls >= 1 && ex.Stats().Running == 1 })
	if err := ex.consume(cons); err != nil { // the client pulls again
		t.Fatal(err)
	}

	poll.Eventually(t, 10*time.Second, "long's late result", func() bool { return len(rec.finished("long")) == 1 })
	if f := rec.finished("long")[0]; f.Status != event.TaskCancelled {
		t.Fatalf("long finished %s (%s), want cancelled (its process killed)", f.Status, f.Error)
	}
	poll.Eventually(t, 10*time.Second, "c ran", func() bool { return h.ran("c") })
	if h.ran("b") || rec.started("b") {
		t.Fatal("b, superseded while the executor was stopped, was started")
	}
	if f := rec.finished("b"); len(f) != 1 || f[0].Status != event.TaskCancelled {
		t.Fatalf("b reports %+v, want one cancelled before it started", f)
	}
}

// executor.online announces slots, queue, capabilities, version and
// incarnation; a negative Queue means as many as Slots.
func TestOnlineAnnouncesCapacity(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, func(c *Config) {
		c.Slots, c.Queue, c.Capabilities, c.Version = 3, -1, []string{"docker", "gpu"}, "v1.2.3"
	})
	on := rec.online()
	want := event.ExecutorOnlineData{Slots: 3, Queue: 3, Capabilities: []string{"docker", "gpu"}, Version: "v1.2.3", Incarnation: "inc-n1"}
	if len(on) != 1 || on[0].Slots != want.Slots || on[0].Queue != want.Queue || !slices.Equal(on[0].Capabilities, want.Capabilities) ||
		on[0].Version != want.Version || on[0].Incarnation != want.Incarnation {
		t.Fatalf("executor.online = %+v, want %+v", on, want)
	}
	if got := ex.Capacity(); got != 6 {
		t.Fatalf("Capacity() = %d, want 6", got)
	}
}

// A consumer deleted under the executor is recreated from the message
// after the last one handled, and work goes on.
func TestLostConsumerRecreated(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("n1", t.TempDir(), rec, nil)
	h.assign("n1", "r1", "before", 0, "")
	poll.Eventually(t, 10*time.Second, "before ran", func() bool { return len(rec.finished("before")) == 1 })
	h.deleteConsumer("n1")
	h.assign("n1", "r1", "after", 0, "")
	poll.Eventually(t, 15*time.Second, "after ran through the recreated consumer", func() bool { return len(rec.finished("after")) == 1 })
	if n := len(rec.finished("before")); n != 1 {
		t.Fatalf("before reported %d times, want once", n)
	}
}

// While every slot is busy, the attempts next in line are recorded started
// ahead of a free slot (one fsync for several starts) and their messages
// stay unacknowledged until their processes start. A cancel reaches one
// recorded ahead: it never starts, is answered cancelled and is recorded
// finished. A Stop forgets the others, so the next start runs them — once.
func TestAttemptsRecordedAhead(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	cfg := func(c *Config) { c.Slots = 2; c.Queue = 3 }
	ex := h.start("n1", state, rec, cfg)
	for _, s := range []string{"a1", "a2"} {
		h.assign("n1", "r1", s, 0, h.gate(s))
	}
	poll.Eventually(t, 10*time.Second, "a1 and a2 started", func() bool { return rec.started("a1") && rec.started("a2") })
	for _, s := range []string{"b", "c", "d"} {
		h.assign("n1", "r1", s, 0, h.gate(s))
	}
	lookup := func(step string) string {
		a, ok, err := ex.state.Lookup("r1", step, 1)
		if err != nil || !ok {
			return ""
		}
		return a.State
	}
	poll.Eventually(t, 10*time.Second, "b and c recorded ahead, d queued", func() bool {
		return lookup("b") == localstate.StateStarted && lookup("c") == localstate.StateStarted && lookup("d") == "" &&
			ex.Stats().Queued == 3
	})
	if info := h.consumerInfo("n1"); info.NumAckPending != 3 {
		t.Fatalf("%d messages unacknowledged, want b's, c's and d's", info.NumAckPending)
	}
	for _, s := range []string{"b", "c", "d"} {
		if h.ran(s) || rec.started(s) {
			t.Fatalf("%s started while every slot was busy", s)
		}
	}

	h.cancelAttempt("n1", "r1", "c", 1, 0, "superseded")
	poll.Eventually(t, 10*time.Second, "c answered and recorded finished", func() bool {
		return len(rec.finished("c")) == 1 && lookup("c") == localstate.StateFinished
	})
	if f := rec.finished("c")[0]; f.Status != event.TaskCancelled || !strings.HasPrefix(f.Error, "cancelled before it started (superseded") {
		t.Fatalf("c reported %+v, want cancelled before it started", f)
	}

	if err := h.stop(ex, time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := localstate.Open(state, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, kept, err := st.Lookup("r1", "b", 1)
	if cerr := st.Close(); err != nil || cerr != nil || kept {
		t.Fatalf("after Stop, b's record kept %v (%v, %v): what was recorded ahead and not started must be forgotten", kept, err, cerr)
	}

	ex = h.start("n1", state, rec, func(c *Config) { cfg(c); c.Slots = 3 })
	poll.Eventually(t, 15*time.Second, "b and d ran after the restart", func() bool { return h.ran("b") && h.ran("d") })
	h.release("b")
	h.release("d")
	poll.Eventually(t, 10*time.Second, "b and d reported", func() bool {
		return len(rec.finished("b")) == 1 && len(rec.finished("d")) == 1
	})
	for _, s := range []string{"b", "d"} {
		if f := rec.finished(s); f[0].Status != event.TaskSucceeded {
			t.Errorf("%s finished %+v, want succeeded", s, f[0])
		}
	}
	if h.ran("c") || rec.started("c") || len(rec.finished("c")) != 1 {
		t.Fatal("c, cancelled while recorded ahead, started or was answered twice")
	}
}
