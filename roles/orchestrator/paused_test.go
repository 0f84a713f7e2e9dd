package orchestrator

import (
	"context"
	"errors"
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

// While Config.Paused says why (the data dir below its floor), the leader
// assigns nothing; once it returns nil, the step is assigned, without
// anything else happening.
func TestPausedLeaderAssignsNothing(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := c.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	var paused atomic.Bool
	paused.Store(true)
	x := &loopLedger{}
	o := New(roles.Env{Node: "o1", Emit: x, Logger: slog.New(slog.DiscardHandler)}, Config{KV: kv, Incarnation: "x1",
		Paused: func() error {
			if paused.Load() {
				return errors.New("disk: below the floor")
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
	poll.Eventually(t, 20*time.Second, "the lease won", func() bool { return slices.Contains(x.types(), string(event.LeaderElected)) })
	x.add(event.ExecutorOnline, "", "b", event.ExecutorOnlineData{Slots: 1, Incarnation: "i1"})
	x.add(event.GoalSubmitted, "r1", "op", event.GoalSubmittedData{Goal: "g"})
	x.add(event.PlanProposed, "r1", "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
		{ID: "s", Kind: event.KindShell, Run: "true", Idempotent: true}}}})
	assigned := func() bool { return slices.Contains(x.types(), string(event.TaskAssigned)) }
	// A paused leader looks again every second: three seconds would have
	// seen an assignment.
	if poll.Wait(3*time.Second, assigned) == nil {
		t.Fatalf("a paused leader assigned a step; ledger: %v", x.types())
	}
	paused.Store(false)
	poll.Eventually(t, 10*time.Second, "the step assigned once unpaused", assigned)
}
