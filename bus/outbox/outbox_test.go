package outbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/outbox"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// collect reads every event in AGENTIC_EVENTS, verified.
func collect(t *testing.T, js jetstream.JetStream, v *envelope.Verifier, want int) []event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, bus.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	for len(out) < want {
		batch, err := cons.Fetch(want, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, _ := m.Metadata()
			env, err := v.Verify(m.Data(), m.Subject(), md.Timestamp)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			out = append(out, env.Events...)
		}
		if n == 0 && ctx.Err() != nil {
			break
		}
	}
	return out
}

func TestEmitPublishesInOrder(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	id := ids.Node(t, "n1", event.RoleExecutor)
	ob, err := outbox.Open(t.TempDir(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	ob.Start(c.JS)
	ctx := context.Background()
	const n = 300
	var want []string
	for i := range n {
		typ := event.TaskStarted
		if i%3 == 0 {
			typ = event.TaskFinished
		}
		d := event.MustDraft(typ, "r1", event.TaskStartedData{Step: fmt.Sprint(i)})
		want = append(want, d.ID)
		if err := ob.Emit(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ob.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	got := collect(t, c.JS, envelope.NewVerifier(ids.Root), n)
	if len(got) != n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	for i := range got {
		if got[i].ID != want[i] {
			t.Fatalf("event %d is %s, want %s (order not kept)", i, got[i].ID, want[i])
		}
	}
}

func TestPendingSurvivesRestart(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	id := ids.Node(t, "n1", event.RoleExecutor)
	dir := t.TempDir()
	ob, err := outbox.Open(dir, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Not started: nothing is published, but Emit has synced to disk.
	var want []string
	for i := range 5 {
		d := event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: fmt.Sprint(i)})
		want = append(want, d.ID)
		if err := ob.Emit(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err = outbox.Open(dir, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if ob.Pending() != 5 {
		t.Fatalf("pending after reopen = %d, want 5", ob.Pending())
	}
	ob.Start(c.JS)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ob.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	got := collect(t, c.JS, envelope.NewVerifier(ids.Root), 5)
	for i := range want {
		if got[i].ID != want[i] {
			t.Fatalf("event %d = %s, want %s", i, got[i].ID, want[i])
		}
	}
	if err := ob.Emit(ctx); err != nil {
		t.Fatal(err)
	}
	// The deletions of what was acknowledged (not synced of their own)
	// are on disk after Close: nothing is published again.
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err = outbox.Open(dir, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if n := ob.Pending(); n != 0 {
		t.Fatalf("pending after a drain and a restart = %d, want 0", n)
	}
}

func TestRejectsOversizedEvent(t *testing.T) {
	ids := bustest.NewIdentities(t)
	ob, err := outbox.Open(t.TempDir(), ids.Node(t, "n1", event.RoleExecutor), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	d := event.MustDraft(event.TaskFinished, "r1", map[string]string{"x": string(make([]byte, envelope.MaxEventBytes+1))})
	if err := ob.Emit(context.Background(), d); err == nil {
		t.Fatal("oversized event accepted")
	}
	if ob.Pending() != 0 {
		t.Fatal("oversized event left something pending")
	}
}

// The deletion of acknowledged entries waits for company while the outbox
// is busy, but not for a Close: once nothing is pending it is written, so
// a crash of an idle node publishes nothing again.
func TestAcknowledgedEntriesDeletedOnceIdle(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	id := ids.Node(t, "n1", event.RoleExecutor)
	ob, err := outbox.Open(t.TempDir(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	ob.Start(c.JS)
	ctx := context.Background()
	for i := range 50 {
		if err := ob.Emit(ctx, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: fmt.Sprint(i)})); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ob.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the acknowledged entries deleted on disk", func() bool {
		n, err := outbox.OnDisk(ob)
		return err == nil && n == 0
	})
	collect(t, c.JS, envelope.NewVerifier(ids.Root), 50)
}

// An outbox that goes idle leaves the disk to the readers of what it just
// published (the ledgers' appends, an executor's start record, which
// follow its acknowledgement within a millisecond or two) for goneIdle
// before it writes the deletion of the acknowledged entries; the
// deletion still comes, once, and a Close writes it at once.
func TestIdleDeletionWaitsGoneIdle(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	id := ids.Node(t, "n1", event.RoleExecutor)
	dir := t.TempDir()
	ob, err := outbox.Open(dir, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	const idle = 400 * time.Millisecond
	outbox.SetGoneIdle(ob, idle)
	// The outbox's clock runs skew ahead of the wall's once the test
	// moves it: the acknowledged entry lingers past goneLinger without a
	// wait.
	var skew atomic.Int64
	outbox.SetNow(ob, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	ob.Start(c.JS)
	ctx := context.Background()
	emit := func(step string) {
		t.Helper()
		if err := ob.Emit(ctx, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: step})); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := ob.WaitDrained(wctx); err != nil {
			t.Fatal(err)
		}
	}
	emit("a")
	drained := time.Now()
	// Inside the idle wait, the acknowledged entry is still on disk.
	if n, err := outbox.OnDisk(ob); err != nil || n != 1 {
		t.Fatalf("%s after the acknowledgement: %d entries on disk (err %v), want the acknowledged one still there", time.Since(drained).Round(time.Millisecond), n, err)
	}
	// A round in the idle wait: the first deletion goes with it (it
	// lingered past goneLinger by the outbox's clock), the second once the
	// outbox is idle again.
	skew.Store(int64(time.Second))
	emit("b")
	poll.Eventually(t, 10*time.Second, "the acknowledged entries deleted on disk", func() bool {
		n, err := outbox.OnDisk(ob)
		return err == nil && n == 0
	})
	if d := time.Since(drained); d < idle {
		t.Errorf("the deletion was written %s after the outbox went idle, want no sooner than %s", d, idle)
	}
	// A Close does not wait: what it acknowledged is deleted before it
	// returns, so the next open publishes nothing again.
	emit("c")
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err = outbox.Open(dir, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if n := ob.Pending(); n != 0 {
		t.Errorf("after a Close and an open: %d entries pending, want 0 (the deletion written at Close)", n)
	}
	collect(t, c.JS, envelope.NewVerifier(ids.Root), 3)
}
