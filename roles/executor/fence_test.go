package executor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go/jetstream"
)

// waitRanAfterStale publishes a stale assignment (epoch stale) and then a
// valid one (epoch valid) to node, waits for the valid one to run, and
// asserts that the stale one did not: the executor handles its messages in
// order, so by then it has handled the stale one.
func waitRanAfterStale(t *testing.T, h *harness, ex *Executor, rec *recorder, node, staleStep, validStep string, stale, valid uint64) {
	t.Helper()
	fenced := ex.Stats().Fenced
	h.assign(node, "r1", staleStep, stale, "")
	h.assign(node, "r1", validStep, valid, "")
	poll.Eventually(t, 10*time.Second, validStep+" ran and reported", func() bool {
		return h.ran(validStep) && len(rec.finished(validStep)) == 1
	})
	if h.ran(staleStep) {
		t.Fatalf("%s (epoch %d) ran after leader.elected(%d): a deposed leader's assignment was executed", staleStep, stale, valid)
	}
	if rec.started(staleStep) || len(rec.finished(staleStep)) > 0 {
		t.Fatalf("%s (epoch %d) was reported started or finished", staleStep, stale)
	}
	if got := ex.Stats().Fenced; got != fenced+1 {
		t.Fatalf("Stats().Fenced = %d, want %d", got, fenced+1)
	}
}

// A task.assigned from a deposed leader, published after a newer
// leader.elected, is not run; the epoch survives a restart of the executor.
func TestStaleAssignmentIsNotRun(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	ex := h.start("n1", state, rec, nil)
	h.elect(9)
	poll.Eventually(t, 10*time.Second, "executor records epoch 9", func() bool { return ex.Stats().Epoch == 9 })
	waitRanAfterStale(t, h, ex, rec, "n1", "stale", "fresh", 5, 9)

	// Restart: the epoch is back at once, and still applied.
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ex = h.start("n1", state, rec, nil)
	if got := ex.Stats().Epoch; got != 9 {
		t.Fatalf("after restart Stats().Epoch = %d, want 9", got)
	}
	waitRanAfterStale(t, h, ex, rec, "n1", "stale2", "fresh2", 8, 9)
}

// An executor whose consumer is created after the last leader.elected
// (a new node) learns the epoch from the stream at start.
func TestEpochSeededFromStream(t *testing.T) {
	h := newHarness(t)
	h.elect(3)
	h.elect(7)
	rec := &recorder{}
	ex := h.start("n2", t.TempDir(), rec, nil)
	if got := ex.Stats().Epoch; got != 7 {
		t.Fatalf("Stats().Epoch after start = %d, want 7 (the newest leader.elected on the stream)", got)
	}
	waitRanAfterStale(t, h, ex, rec, "n2", "stale", "fresh", 3, 7)
}

// The rule is the ledger's, by stream position: an assignment made before
// a newer election is valid even if the executor receives it after
// learning of that election (here: it was down while both were published).
func TestAssignmentBeforeElectionStillRuns(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	rec := &recorder{}
	h.elect(4)
	ex := h.start("n3", state, rec, nil)
	if err := h.stop(ex, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	h.assign("n3", "r1", "early", 4, "") // valid: epoch 4 is in force
	h.elect(6)
	ex = h.start("n3", state, rec, nil)
	if got := ex.Stats().Epoch; got != 6 {
		t.Fatalf("Stats().Epoch after start = %d, want 6", got)
	}
	poll.Eventually(t, 10*time.Second, "early (epoch 4, before leader.elected(6)) ran", func() bool { return h.ran("early") })
	waitRanAfterStale(t, h, ex, rec, "n3", "late", "fresh", 4, 6)
	if got := ex.Stats().Fenced; got != 1 {
		t.Fatalf("Stats().Fenced = %d, want 1 (only the late assignment)", got)
	}
}

// A task.cancel from a deposed leader does not stop the attempt; a current
// one does.
func TestStaleCancelIsIgnored(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n4", t.TempDir(), rec, nil)
	h.elect(5)
	poll.Eventually(t, 10*time.Second, "executor records epoch 5", func() bool { return ex.Stats().Epoch == 5 })
	h.assign("n4", "r1", "long", 5, "sleep 30")
	poll.Eventually(t, 10*time.Second, "long started", func() bool { return rec.started("long") })
	h.cancel("n4", "r1", "long", 2)
	poll.Eventually(t, 10*time.Second, "stale cancel counted as fenced", func() bool { return ex.Stats().Fenced == 1 })
	if n := len(rec.finished("long")); n != 0 {
		t.Fatalf("long finished after a stale cancel (%d reports)", n)
	}
	h.cancel("n4", "r1", "long", 5)
	poll.Eventually(t, 10*time.Second, "long cancelled", func() bool { return len(rec.finished("long")) == 1 })
	if f := rec.finished("long")[0]; f.Status != event.TaskCancelled {
		t.Fatalf("long finished %s (%s), want cancelled", f.Status, f.Error)
	}
}

// An executor consumer made by an older version (without the election
// subject) is updated in place and then delivers elections.
func TestOldConsumerIsUpdated(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := h.js.CreateOrUpdateConsumer(ctx, bus.EventsStream, jetstream.ConsumerConfig{
		Durable:        ConsumerName("n5"),
		FilterSubjects: event.NodeSubjects("n5"),
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        30 * time.Second,
		MaxAckPending:  4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ex := h.start("n5", t.TempDir(), rec, nil)
	info := h.consumerInfo("n5")
	if !slices.Contains(info.Config.FilterSubjects, event.Subject(event.LeaderElected, "")) {
		t.Fatalf("consumer filter = %v, want it to include leader.elected", info.Config.FilterSubjects)
	}
	h.elect(11)
	poll.Eventually(t, 10*time.Second, "executor records epoch 11 through the updated consumer", func() bool { return ex.Stats().Epoch == 11 })
	waitRanAfterStale(t, h, ex, rec, "n5", "stale", "fresh", 10, 11)
}

// A leader.elected signed by a node without the orchestrator role is
// refused and changes nothing.
func TestForgedElectionIsRefused(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	ex := h.start("n6", t.TempDir(), rec, nil)
	h.elect(2)
	poll.Eventually(t, 10*time.Second, "executor records epoch 2", func() bool { return ex.Stats().Epoch == 2 })
	forger := h.ids.Node(t, "exec-evil", event.RoleExecutor)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 99}, Leader: "exec-evil"})
	if err := bus.PublishSigned(ctx, h.js, forger, d); err != nil {
		t.Fatal(err)
	}
	// The forged election is before this assignment in the stream; were it
	// accepted, the assignment (epoch 2) would be dropped.
	h.assign("n6", "r1", "ok", 2, "")
	poll.Eventually(t, 10*time.Second, "ok ran", func() bool { return h.ran("ok") })
	if got := ex.Stats().Epoch; got != 2 {
		t.Fatalf("Stats().Epoch = %d after a forged election, want 2", got)
	}
}
