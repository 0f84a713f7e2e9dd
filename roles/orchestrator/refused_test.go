package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// refusing is a loopLedger whose emitter refuses, as the outbox does a
// draft too large for an event, every batch that holds a decision of
// run bad.
type refusing struct {
	*loopLedger
}

func (x refusing) Emit(ctx context.Context, drafts ...event.Draft) error {
	for _, d := range drafts {
		if d.Run == "bad" {
			return fmt.Errorf("%w: event %s (%s) payload is too large", envelope.ErrTooLarge, d.ID, d.Type)
		}
	}
	return x.loopLedger.Emit(ctx, drafts...)
}

// TestRefusedDecisionHoldsNoOtherBack: a decision the emitter refuses for
// what it carries does not hold back the decisions decided with it: the
// leader emits them one at a time, and the other run goes on and ends.
func TestRefusedDecisionHoldsNoOtherBack(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := c.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	x := refusing{&loopLedger{}}
	o := New(roles.Env{Node: "o1", Emit: x, Logger: slog.New(slog.DiscardHandler)}, Config{KV: kv, Incarnation: "x1"})
	x.o = o
	x.add(event.ExecutorOnline, "", "n1", event.ExecutorOnlineData{Slots: 4, Incarnation: "i1"})
	for _, run := range []string{"bad", "good"} { // both accepted by the first Decide
		x.add(event.GoalSubmitted, run, "op", event.GoalSubmittedData{Goal: run})
		x.add(event.PlanProposed, run, "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
			{ID: "s", Kind: event.KindNoop}}}})
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := o.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	poll.Eventually(t, 20*time.Second, "good's step assigned", func() bool {
		return strings.Contains(strings.Join(x.types(), " "), string(event.TaskAssigned))
	})
	x.add(event.TaskFinished, "good", "n1", event.TaskFinishedData{Step: "s", Attempt: 1, Node: "n1", Status: event.TaskSucceeded})
	poll.Eventually(t, 20*time.Second, "good finished", func() bool {
		var done bool
		o.Read(func(s *core.State) { done = s.Runs["good"] == nil })
		return done
	})
	var bad core.RunStatus
	o.Read(func(s *core.State) { bad = s.Runs["bad"].Status })
	if bad != core.RunPlanned {
		t.Fatalf("bad is %s, want planned (its acceptance refused)", bad)
	}
}
