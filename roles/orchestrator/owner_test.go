package orchestrator

import (
	"context"
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
