package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// TestDecidingHoldsBackNoFoldAndNoRead: while a leader's turn of decisions
// is under way (held here in Config.Paused, which the turn consults), the
// node's folds go on and Load and Leader answer at once: one goroutine
// owns the core, folds are handed to it, and readers read what it
// published. Once the turn ends, what was folded meanwhile is decided.
func TestDecidingHoldsBackNoFoldAndNoRead(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := c.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	var hold atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	x := &loopLedger{}
	o := New(roles.Env{Node: "o1", Emit: x, Logger: slog.New(slog.DiscardHandler)}, Config{KV: kv, Incarnation: "x1",
		Paused: func() error {
			if hold.Load() {
				select {
				case entered <- struct{}{}:
				default:
				}
				<-release
			}
			return nil
		}})
	x.o = o
	o.Settled(true)
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := o.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	poll.Eventually(t, 20*time.Second, "the lease won", func() bool { return slices.Contains(x.types(), string(event.LeaderElected)) })
	poll.Eventually(t, 10*time.Second, "the leader deciding", func() bool { return o.Leader() > 0 })
	hold.Store(true)
	x.add(event.ExecutorOnline, "", "b", event.ExecutorOnlineData{Slots: 1, Incarnation: "i1"})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader never decided after a fold")
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		x.add(event.GoalSubmitted, "r1", "op", event.GoalSubmittedData{Goal: "g"})
		x.add(event.PlanProposed, "r1", "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
			{ID: "s", Kind: event.KindShell, Run: "true", Idempotent: true}}}})
		o.Load()
		o.Leader()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a fold or a read waited for a decision under way")
	}
	hold.Store(false)
	close(release)
	released = true
	poll.Eventually(t, 10*time.Second, "the step folded meanwhile assigned", func() bool {
		return slices.Contains(x.types(), string(event.TaskAssigned))
	})
	poll.Eventually(t, 10*time.Second, "the assignment counted in Load", func() bool { return o.Load()["b"] == 1 })
}

// TestOwnerHandOver: the caller folds while no owner runs (before Start,
// after Stop), the owner while it runs; Snapshot and Read see every event
// handed over before them, whoever folds, and a snapshot restored while
// the owner runs is the state it goes on from.
func TestOwnerHandOver(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := c.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	var l ledger
	o := New(roles.Env{Node: "o1", Emit: roles.EmitterFunc(func(context.Context, ...event.Draft) error { return nil }),
		Logger: slog.New(slog.DiscardHandler)}, Config{KV: kv, Incarnation: "x1"})
	submit := func(run string) {
		o.Fold(l.add(event.GoalSubmitted, run, "op", time.Now().UTC(), event.GoalSubmittedData{Goal: "g"}))
	}
	seqIs := func(when string, want uint64) {
		t.Helper()
		seq, b, err := o.Snapshot()
		if err != nil || seq != want || len(b) == 0 {
			t.Fatalf("%s: snapshot at %d (%d bytes, err %v), want %d", when, seq, len(b), err, want)
		}
	}
	submit("r1")
	seqIs("before Start", 1)
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		submit(fmt.Sprintf("r%d", i+2))
	}
	seqIs("running", 501)
	_, saved, err := o.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	submit("r502")
	var runs int
	o.Read(func(s *core.State) { runs = len(s.Runs) })
	if runs != 502 {
		t.Fatalf("Read while running sees %d runs, want 502", runs)
	}
	if err := o.Restore(saved); err != nil {
		t.Fatal(err)
	}
	seqIs("restored while running", 501)
	if err := o.Restore([]byte("not a snapshot")); err == nil {
		t.Fatal("Restore took a bad snapshot")
	}
	seqIs("after a bad snapshot", 501)
	if err := o.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.seq = 501
	submit("r503")
	seqIs("after Stop", 502)
}
