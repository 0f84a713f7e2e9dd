package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/membership"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// members is a membership view a test sets: what the gossip layer gives
// the orchestrator (Config.Membership), without the gossip.
type members struct {
	mu      sync.Mutex
	list    []membership.Member
	changed chan struct{}
}

func (m *members) Members() []membership.Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]membership.Member(nil), m.list...)
}

func (m *members) Changed() <-chan struct{} { return m.changed }

// set replaces the view; signal says whether to signal the change (the
// leader must also notice one it was not told about, on its tick).
func (m *members) set(signal bool, list ...membership.Member) {
	m.mu.Lock()
	m.list = list
	m.mu.Unlock()
	if signal {
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
}

func member(node, inc string, state membership.State) membership.Member {
	return membership.Member{Meta: membership.Meta{Node: node, Incarnation: inc, Roles: []string{event.RoleExecutor}, Slots: 1}, State: state}
}

// loopLedger commits what the role emits and folds it back, as the node's
// outbox, stream and ledger would, in order.
type loopLedger struct {
	mu  sync.Mutex
	l   ledger
	o   *Orchestrator
	log []event.Event
}

func (x *loopLedger) Emit(_ context.Context, drafts ...event.Draft) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, d := range drafts {
		ev := x.l.commit(d, "o1")
		ev.Time = time.Now().UTC()
		x.log = append(x.log, ev)
		x.o.Fold(ev)
	}
	x.o.Settled(true)
	return nil
}

// add commits an event another node emitted.
func (x *loopLedger) add(typ event.Type, run, node string, payload any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ev := x.l.add(typ, run, node, time.Now().UTC(), payload)
	x.log = append(x.log, ev)
	x.o.Fold(ev)
	x.o.Settled(true)
}

// types lists the types committed, in order.
func (x *loopLedger) types() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	for _, ev := range x.log {
		out = append(out, string(ev.Type))
	}
	return out
}

// TestLeaderRecordsMembership runs the role's loop on a real leader
// bucket: once it leads, it records what the membership says as ledger
// events (node.joined, node.failed), on a change it is told of and on its
// tick for one it is not; a node the ledger holds alive that the
// membership does not know fails after the grace period; the steps of a
// failed node are given to another (Load follows).
func TestLeaderRecordsMembership(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := c.JS.KeyValue(ctx, bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	view := &members{changed: make(chan struct{}, 1)}
	view.set(false, member("b", "i1", membership.Alive), member("c", "i1", membership.Alive))
	x := &loopLedger{}
	o := New(roles.Env{Node: "o1", Emit: x, Logger: slog.New(slog.DiscardHandler)}, Config{KV: kv, Incarnation: "x1",
		Membership: view, MembershipGrace: 300 * time.Millisecond})
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
	node := func(id string) (n core.Node, ok bool) {
		o.Read(func(s *core.State) {
			if p := s.Nodes[id]; p != nil {
				n, ok = *p, true
			}
		})
		return n, ok
	}
	poll.Eventually(t, 20*time.Second, "b and c recorded joined", func() bool {
		b, okb := node("b")
		c, okc := node("c")
		return okb && okc && b.State == core.NodeAlive && c.State == core.NodeAlive
	})

	// One of them runs a step; then the membership declares it dead.
	x.add(event.GoalSubmitted, "r1", "op", event.GoalSubmittedData{Goal: "g"})
	x.add(event.PlanProposed, "r1", "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
		{ID: "s", Kind: event.KindShell, Run: "true", Idempotent: true}}}})
	var holder string
	poll.Eventually(t, 10*time.Second, "the step assigned", func() bool {
		for n := range o.Load() {
			holder = n
		}
		return holder != ""
	})
	x.add(event.TaskStarted, "r1", holder, event.TaskStartedData{Step: "s", Attempt: 1})
	other := map[string]string{"b": "c", "c": "b"}[holder]
	list := []membership.Member{member(holder, "i1", membership.Dead), member(other, "i1", membership.Alive)}
	view.set(false, list...) // no signal: the tick must find it
	poll.Eventually(t, 20*time.Second, fmt.Sprintf("the step given from %s to %s", holder, other), func() bool {
		load := o.Load()
		return load[holder] == 0 && load[other] == 1
	})
	if n, _ := node(holder); n.State != core.NodeFailed {
		t.Fatalf("%s recorded %s, want failed; ledger: %v", holder, n.State, x.types())
	}

	// A node the ledger holds alive that the membership no longer knows
	// fails once the grace period is over.
	view.set(true, list[0])
	poll.Eventually(t, 20*time.Second, other+" failed as absent", func() bool {
		n, _ := node(other)
		return n.State == core.NodeFailed && n.Reason == "not in the membership view"
	})
}
