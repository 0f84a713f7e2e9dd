package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/nats-io/nats.go/jetstream"
)

// counted is a step script that appends a line to the step's run count
// file, then touches its marker.
func (h *harness) counted(step string) string {
	return "echo run >> " + filepath.Join(h.work, step+".count") + "; touch " + h.marker(step)
}

// runs is how many times a counted step's script ran.
func (h *harness) runs(step string) int {
	b, err := os.ReadFile(filepath.Join(h.work, step+".count"))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "run\n")
}

// consumerExists reports whether node's executor consumer is on the
// server, and its config if so.
func (h *harness) consumerExists(node string) (jetstream.ConsumerConfig, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := h.js.Consumer(ctx, bus.EventsStream, ConsumerName(node))
	if err != nil {
		return jetstream.ConsumerConfig{}, false
	}
	return c.CachedInfo().Config, true
}

// consumerCheck returns ex's consumer check, checking what it declares.
func consumerCheck(t *testing.T, ex *Executor) health.Check {
	t.Helper()
	cs := ex.Checks()
	if len(cs) != 1 || cs[0].Name != health.CheckConsumer || !cs[0].Blocking || cs[0].Alarm != event.AlarmConsumerMissing ||
		cs[0].Probe == nil || cs[0].Changed == nil {
		t.Fatalf("Checks() = %+v, want one blocking %q check raising %s", cs, health.CheckConsumer, event.AlarmConsumerMissing)
	}
	return cs[0]
}

// healedOnce asserts that the consumer check, probed after the consumer
// was made again, reports the fault once — naming the consumer and the
// position it was made from — and then passes.
func healedOnce(t *testing.T, c health.Check, node string) {
	t.Helper()
	err := c.Probe(context.Background())
	if err == nil {
		t.Fatal("consumer check passes at once: the missing consumer was never reported")
	}
	for _, want := range []string{ConsumerName(node), "missing since", "recreating from stream seq"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("consumer check reason %q lacks %q", err, want)
		}
	}
	if err := c.Probe(context.Background()); err != nil {
		t.Fatalf("consumer check after the repair = %v, want it passing", err)
	}
}

// A consumer deleted while the executor is idle is noticed, made again
// from the recorded position, and the next assignment runs; the check
// fails, then passes.
func TestConsumerDeletedWhileIdle(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, nil)
	check := consumerCheck(t, ex)
	h.assign("n1", "r1", "before", 0, h.counted("before"))
	poll.Eventually(t, 10*time.Second, "before ran", func() bool { return len(rec.finished("before")) == 1 })
	if err := check.Probe(context.Background()); err != nil {
		t.Fatalf("consumer check with the consumer in place = %v", err)
	}
	changed := check.Changed()

	h.deleteConsumer("n1")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the deletion changed nothing the monitor would see")
	}
	h.assign("n1", "r1", "after", 0, h.counted("after"))
	poll.Eventually(t, 15*time.Second, "after ran through the recreated consumer", func() bool { return len(rec.finished("after")) == 1 })
	cfg, ok := h.consumerExists("n1")
	if !ok || cfg.DeliverPolicy != jetstream.DeliverByStartSequencePolicy {
		t.Fatalf("consumer after the repair: exists %v, config %+v; want it delivering from a sequence", ok, cfg)
	}
	healedOnce(t, check, "n1")
	if h.runs("before") != 1 || h.runs("after") != 1 || len(rec.finished("before")) != 1 {
		t.Fatalf("before ran %d times (reported %d), after %d; want once each", h.runs("before"), len(rec.finished("before")), h.runs("after"))
	}
}

// A consumer deleted while an attempt runs, another waits in the queue and
// a third was refused (no room: given back to the server, unacknowledged):
// the running one finishes, the queued one, the refused one and one
// assigned while the consumer was missing run, and nothing runs or is
// reported twice.
func TestConsumerDeletedWithWorkInFlight(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, func(c *Config) { c.Slots, c.Queue = 1, 1 })
	check := consumerCheck(t, ex)
	h.assign("n1", "r1", "a", 0, "echo run >> "+filepath.Join(h.work, "a.count")+"; "+h.gate("a"))
	poll.Eventually(t, 10*time.Second, "a started", func() bool { return h.ran("a") })
	h.assign("n1", "r1", "b", 0, h.counted("b"))
	poll.Eventually(t, 10*time.Second, "b queued", func() bool { return ex.Stats().Queued == 1 })
	h.assign("n1", "r1", "c", 0, h.counted("c"))
	poll.Eventually(t, 10*time.Second, "c refused", func() bool { return ex.Stats().Refused >= 1 })

	h.deleteConsumer("n1")
	h.assign("n1", "r1", "d", 0, h.counted("d"))
	poll.Eventually(t, 15*time.Second, "the consumer made again", func() bool { _, ok := h.consumerExists("n1"); return ok })
	h.release("a")
	poll.Eventually(t, 15*time.Second, "a, b, c and d reported", func() bool {
		return len(rec.finished("a")) >= 1 && len(rec.finished("b")) >= 1 && len(rec.finished("c")) >= 1 && len(rec.finished("d")) >= 1
	})
	// Redeliveries of what was handled before the deletion come and go.
	if err := poll.Wait(10*time.Second, func() bool {
		info := h.consumerInfo("n1")
		return info.NumPending == 0 && info.NumAckPending == 0
	}); err != nil {
		info := h.consumerInfo("n1")
		t.Fatalf("%v: the recreated consumer has %d pending, %d unacknowledged (ack floor %+v, delivered %+v); stats %+v",
			err, info.NumPending, info.NumAckPending, info.AckFloor, info.Delivered, ex.Stats())
	}
	for _, s := range []string{"a", "b", "c", "d"} {
		f := rec.finished(s)
		if h.runs(s) != 1 || len(f) != 1 || f[0].Status != event.TaskSucceeded {
			t.Errorf("%s ran %d times and reports %+v; want once, succeeded", s, h.runs(s), f)
		}
	}
	if got := rec.startOrder(); len(got) != 4 {
		t.Errorf("task.started for %v, want one each for a, b, c, d", got)
	}
	healedOnce(t, check, "n1")
}

// A consumer deleted while the executor is stopped is made again at the
// next start from the recorded position: what was assigned meanwhile
// runs, what ran before does not run again.
func TestConsumerDeletedWhileStopped(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	ex := h.start("n1", state, rec, nil)
	h.assign("n1", "r1", "before", 0, h.counted("before"))
	poll.Eventually(t, 10*time.Second, "before ran", func() bool { return len(rec.finished("before")) == 1 })
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	h.deleteConsumer("n1")
	h.assign("n1", "r1", "during", 0, h.counted("during"))
	h.assignNoop("n1", "r1", "noop", 0)

	ex = h.start("n1", state, rec, nil)
	check := consumerCheck(t, ex)
	poll.Eventually(t, 15*time.Second, "the backlog delivered", func() bool {
		return len(rec.finished("during")) == 1 && len(rec.finished("noop")) >= 1
	})
	cfg, ok := h.consumerExists("n1")
	if !ok || cfg.DeliverPolicy != jetstream.DeliverByStartSequencePolicy || cfg.OptStartSeq == 0 {
		t.Fatalf("consumer after the restart: exists %v, config %+v; want it delivering from the recorded position", ok, cfg)
	}
	if h.runs("before") != 1 || h.runs("during") != 1 {
		t.Fatalf("before ran %d times, during %d; want once each", h.runs("before"), h.runs("during"))
	}
	healedOnce(t, check, "n1")
}

// The first start of an executor, with no position recorded, makes its
// consumer delivering new messages only, and the check passes.
func TestFirstStartDeliversNew(t *testing.T) {
	h := newHarness(t)
	h.assign("n1", "r1", "old", 0, h.counted("old"))
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, nil)
	if cfg, ok := h.consumerExists("n1"); !ok || cfg.DeliverPolicy != jetstream.DeliverNewPolicy {
		t.Fatalf("consumer of a first start: exists %v, config %+v; want deliver new", ok, cfg)
	}
	if err := consumerCheck(t, ex).Probe(context.Background()); err != nil {
		t.Fatalf("consumer check = %v", err)
	}
	h.assign("n1", "r1", "new", 0, h.counted("new"))
	poll.Eventually(t, 10*time.Second, "new ran", func() bool { return len(rec.finished("new")) == 1 })
	if h.runs("old") != 0 {
		t.Fatal("an assignment older than the executor's first start ran")
	}
}

// A consumer deleted while no pull request is open (so the server has
// nobody to tell) is noticed by the executor's own look at it.
func TestConsumerDeletedUnnoticedByThePull(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, nil)
	check := consumerCheck(t, ex)
	ex.mu.Lock()
	cc := ex.mu.consume
	ex.mu.Unlock()
	cc.Stop() // no pull request open: the deletion reaches nobody
	<-cc.Closed()
	h.deleteConsumer("n1")
	h.assign("n1", "r1", "after", 0, h.counted("after"))
	poll.Eventually(t, 15*time.Second, "after ran through the recreated consumer", func() bool { return len(rec.finished("after")) == 1 })
	healedOnce(t, check, "n1")
}

// A drain completed before the consumer was lost is delivered again by
// the consumer made from an older position (an assignment queued below it
// was never acknowledged): it is not honoured a second time.
func TestCompletedDrainNotHonouredAgain(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	cfg := func(c *Config) { c.Slots, c.Queue = 1, 1 }
	ex := h.start("n1", state, rec, cfg)
	h.assign("n1", "r1", "a", 0, h.gate("a"))
	poll.Eventually(t, 10*time.Second, "a started", func() bool { return h.ran("a") })
	h.assign("n1", "r1", "b", 0, h.counted("b"))
	poll.Eventually(t, 10*time.Second, "b queued", func() bool { return ex.Stats().Queued == 1 })
	h.drain("n1", "maintenance")
	poll.Eventually(t, 10*time.Second, "drain read", func() bool { return ex.Stats().Draining })
	h.release("a")
	poll.Eventually(t, 10*time.Second, "drained", func() bool { return drainedNow(ex) })
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	h.deleteConsumer("n1")

	ex = h.start("n1", state, rec, cfg)
	h.assign("n1", "r1", "c", 0, h.counted("c"))
	poll.Eventually(t, 15*time.Second, "b and c ran after the restart", func() bool {
		return len(rec.finished("b")) == 1 && len(rec.finished("c")) == 1
	})
	if st := ex.Stats(); st.Draining || drainedNow(ex) {
		t.Fatalf("Stats %+v: the completed drain was honoured again", st)
	}
	if h.runs("b") != 1 || h.runs("c") != 1 {
		t.Fatalf("b ran %d times, c %d; want once each", h.runs("b"), h.runs("c"))
	}
}

// The events stream deleted and made again while the executor was
// stopped (its sequences start over, below the recorded position): the
// consumer made again at the next start delivers everything the new
// stream holds, so what was assigned since runs.
func TestStreamMadeAgainBelowThePosition(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	ex := h.start("n1", state, rec, nil)
	for i := range 5 {
		h.assign("n1", "r1", "old"+strings.Repeat("x", i), 0, "")
	}
	poll.Eventually(t, 10*time.Second, "the old steps ran and the position moved past them", func() bool {
		return len(rec.finished("oldxxxx")) == 1 && ex.position.Load() > 5
	})
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.js.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(ctx, h.js, bus.StreamConfig{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	h.assign("n1", "r2", "new", 0, h.counted("new"))
	ex = h.start("n1", state, rec, nil)
	poll.Eventually(t, 15*time.Second, "new ran", func() bool { return len(rec.finished("new")) == 1 })
	if cfg, ok := h.consumerExists("n1"); !ok || cfg.OptStartSeq != 1 {
		t.Fatalf("consumer after the stream was made again: exists %v, config %+v; want it delivering from 1", ok, cfg)
	}
	if err := consumerCheck(t, ex).Probe(context.Background()); err == nil {
		t.Fatal("consumer check passes at once: the missing consumer was never reported")
	}
}

// restartJetStream shuts the server's JetStream down, keeping its store,
// and enables it again with the same configuration, as the embedded
// server does once a full disk has space again.
func (h *harness) restartJetStream() {
	h.t.Helper()
	s := h.srv.NATS()
	cfg := s.JetStreamConfig()
	if cfg == nil {
		h.t.Fatal("JetStream is not enabled")
	}
	cfg.StoreDir = filepath.Dir(cfg.StoreDir) // EnableJetStream appends "jetstream" again
	if err := s.ShutdownJetStream(); err != nil {
		h.t.Fatalf("shut JetStream down: %v", err)
	}
	if err := s.EnableJetStream(cfg); err != nil {
		h.t.Fatalf("enable JetStream again: %v", err)
	}
	poll.Eventually(h.t, 20*time.Second, "the events stream answers", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := h.js.Stream(ctx, bus.EventsStream)
		if err != nil {
			return false
		}
		_, err = st.Info(ctx)
		return err == nil
	})
}

// After JetStream restarts in-process (its pull requests lost, the
// consumer restored from its store), the executor pulls again within its
// consumer heartbeat and runs the next assignment, once. The deadline is
// well under the client's default idle heartbeat (15 s, a pull made again
// after two missed), which left the executor deaf for half a minute.
func TestConsumerAfterJetStreamRestart(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, nil)
	check := consumerCheck(t, ex)
	h.assign("n1", "r1", "before", 0, h.counted("before"))
	poll.Eventually(t, 10*time.Second, "before ran", func() bool { return len(rec.finished("before")) == 1 })

	h.restartJetStream()
	h.assign("n1", "r1", "after", 0, h.counted("after"))
	poll.Eventually(t, 4*consumeHeartbeat+5*time.Second, "after ran once JetStream was back", func() bool {
		return len(rec.finished("after")) == 1
	})
	if h.runs("before") != 1 || h.runs("after") != 1 {
		t.Fatalf("before ran %d times, after %d; want once each", h.runs("before"), h.runs("after"))
	}
	if err := check.Probe(context.Background()); err != nil {
		t.Fatalf("consumer check after the restart = %v, want it passing (the consumer was never lost)", err)
	}
}
