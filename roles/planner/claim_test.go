package planner

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
)

// bus is a shared stand-in ledger for several planners: every draft any of
// them emits is committed in one order and folded into all of them, as a
// ledger node's follower would. It is the role's own Emitter interface,
// not a stand-in for NATS.
type bus struct {
	mu       sync.Mutex
	l        ledger
	planners []*Planner
	events   []event.Event
	// hold, per planner node, drops its drafts (a planner that dies after
	// claiming).
	hold map[string]bool
}

type busEmitter struct {
	b    *bus
	node string
}

func (e busEmitter) Emit(_ context.Context, drafts ...event.Draft) error {
	e.b.mu.Lock()
	defer e.b.mu.Unlock()
	for _, d := range drafts {
		if e.b.hold[e.node] && d.Type != event.PlanClaimed {
			continue
		}
		ev := e.b.l.commit(d)
		ev.Node = e.node
		e.b.events = append(e.b.events, ev)
		foldMu.Lock()
		for _, p := range e.b.planners {
			p.Fold(ev)
		}
		foldMu.Unlock()
	}
	return nil
}

func (b *bus) planner(t *testing.T, node string, cfg Config) *Planner {
	t.Helper()
	p := New(roles.Env{Node: node, Emit: busEmitter{b, node}}, cfg)
	b.mu.Lock()
	b.planners = append(b.planners, p)
	b.mu.Unlock()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

func (b *bus) submit(run string, g event.GoalSubmittedData) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := b.l.event(event.GoalSubmitted, run, g)
	b.events = append(b.events, ev)
	foldMu.Lock()
	for _, p := range b.planners {
		p.Fold(ev)
	}
	foldMu.Unlock()
}

func (b *bus) of(t event.Type) []event.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []event.Event
	for _, ev := range b.events {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

// echoModel is a text source that plans every goal: one step echoing it.
var echoModel = SourceFunc{name: "llm", f: func(_ context.Context, _ string, g event.GoalSubmittedData) (*event.Plan, error) {
	return &event.Plan{Steps: []event.Step{{ID: "a", Run: "echo " + g.Text}}}, nil
}}

// TestExactlyOnePlannerPlans: several planners that can all plan a goal
// (free text, each with a model) claim it; the first claim in the ledger
// holds, and only its planner proposes.
func TestExactlyOnePlannerPlans(t *testing.T) {
	b := &bus{}
	var ps []*Planner
	for _, n := range []string{"p1", "p2", "p3"} {
		ps = append(ps, b.planner(t, n, Config{Text: echoModel}))
	}
	for i := range 20 {
		b.submit(string(rune('a'+i)), event.GoalSubmittedData{Text: "hi"})
	}
	for _, p := range ps {
		p.Settled(true)
	}
	poll.Eventually(t, 10*time.Second, "20 proposals", func() bool { return len(b.of(event.PlanProposed)) >= 20 })
	claims := map[string]string{}
	for _, c := range b.of(event.PlanClaimed) {
		if _, ok := claims[c.Run]; !ok {
			claims[c.Run] = c.Node
		}
	}
	got := map[string]int{}
	for _, pr := range b.of(event.PlanProposed) {
		got[pr.Run]++
		if pr.Node != claims[pr.Run] {
			t.Errorf("run %s proposed by %s, claimed first by %s", pr.Run, pr.Node, claims[pr.Run])
		}
	}
	for run, n := range got {
		if n != 1 {
			t.Errorf("run %s: %d proposals", run, n)
		}
	}
}

// TestPlannerWithoutModelLeavesTextGoals: a planner that cannot plan free
// text does not claim it; the one with a model does, and plans it.
func TestPlannerWithoutModelLeavesTextGoals(t *testing.T) {
	b := &bus{}
	llm := SourceFunc{name: "llm", f: func(_ context.Context, _ string, g event.GoalSubmittedData) (*event.Plan, error) {
		return &event.Plan{Steps: []event.Step{{ID: "a", Run: "echo " + g.Text}}}, nil
	}}
	plain := b.planner(t, "plain", Config{ClaimTimeout: time.Hour})
	smart := b.planner(t, "smart", Config{Text: llm, ClaimTimeout: time.Hour})
	b.submit("r", event.GoalSubmittedData{Text: "hi"})
	plain.Settled(true)
	smart.Settled(true)
	poll.Eventually(t, 10*time.Second, "a proposal", func() bool { return len(b.of(event.PlanProposed)) == 1 })
	for _, c := range b.of(event.PlanClaimed) {
		if c.Node != "smart" {
			t.Fatalf("claimed by %s", c.Node)
		}
	}
	if pr := b.of(event.PlanProposed)[0]; pr.Node != "smart" {
		t.Fatalf("proposed by %s", pr.Node)
	}
}

// TestLapsedClaimIsTakenOver: a planner that claims and never plans (it
// died) holds the run only until its claim lapses; another then claims and
// plans it.
func TestLapsedClaimIsTakenOver(t *testing.T) {
	b := &bus{hold: map[string]bool{"dies": true}}
	cfg := Config{Timeout: 50 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond, Text: echoModel}
	dies := b.planner(t, "dies", cfg)
	b.submit("r", event.GoalSubmittedData{Text: "hi"})
	dies.Settled(true)
	poll.Eventually(t, 10*time.Second, "the first claim", func() bool { return len(b.of(event.PlanClaimed)) == 1 })
	other := b.planner(t, "other", cfg)
	history := append(b.of(event.GoalSubmitted), b.of(event.PlanClaimed)...)
	foldMu.Lock()
	for _, ev := range history {
		other.Fold(ev)
	}
	foldMu.Unlock()
	other.Settled(true)
	poll.Eventually(t, 10*time.Second, "the takeover's proposal", func() bool { return len(b.of(event.PlanProposed)) == 1 })
	if pr := b.of(event.PlanProposed)[0]; pr.Node != "other" {
		t.Fatalf("proposed by %s", pr.Node)
	}
	if cs := b.of(event.PlanClaimed); len(cs) < 2 || cs[0].Node != "dies" {
		t.Fatalf("claims %+v", cs)
	}
}

// TestPlanFileNeedsNoClaim: a plan file is proposed at once, without a
// plan.claimed: every planner that sees it proposes the same plan (the
// orchestrator takes the first proposal and ignores the others), so a
// claim would only cost a round trip through the ledger.
func TestPlanFileNeedsNoClaim(t *testing.T) {
	b := &bus{}
	var ps []*Planner
	for _, n := range []string{"p1", "p2"} {
		ps = append(ps, b.planner(t, n, Config{ClaimTimeout: time.Hour}))
	}
	for i := range 5 {
		b.submit(string(rune('a'+i)), event.GoalSubmittedData{PlanFile: "steps: [{id: a, run: x}]"})
	}
	for _, p := range ps {
		p.Settled(true)
	}
	poll.Eventually(t, 10*time.Second, "5 runs proposed", func() bool {
		runs := map[string]bool{}
		for _, pr := range b.of(event.PlanProposed) {
			runs[pr.Run] = true
		}
		return len(runs) == 5
	})
	if cs := b.of(event.PlanClaimed); len(cs) != 0 {
		t.Fatalf("%d plan.claimed for plan files (the first for run %s by %s), want none", len(cs), cs[0].Run, cs[0].Node)
	}
	first := map[string]string{}
	for _, pr := range b.of(event.PlanProposed) {
		var d event.PlanProposedData
		if err := pr.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.Revision != 1 || len(d.Plan.Steps) != 1 || d.Plan.Steps[0].Run != "x" {
			t.Fatalf("run %s: proposal %+v", pr.Run, d)
		}
		plan, _ := json.Marshal(d.Plan)
		if f, ok := first[pr.Run]; ok && f != string(plan) {
			t.Fatalf("run %s: two planners proposed different plans:\n%s\n%s", pr.Run, f, plan)
		}
		first[pr.Run] = string(plan)
	}
}

// TestNoPlannerRejects: a text goal no planner can plan is rejected with
// code no_planner once the claim timeout has passed.
func TestNoPlannerRejects(t *testing.T) {
	b := &bus{}
	p := b.planner(t, "plain", Config{ClaimTimeout: 100 * time.Millisecond})
	b.submit("r", event.GoalSubmittedData{Text: "hi"})
	p.Settled(true)
	poll.Eventually(t, 10*time.Second, "the rejection", func() bool { return len(b.of(event.PlanRejected)) == 1 })
	var d event.PlanRejectedData
	ev := b.of(event.PlanRejected)[0]
	if err := ev.Decode(&d); err != nil || d.Code != event.NoPlanner || len(b.of(event.PlanClaimed)) != 0 {
		t.Fatalf("rejection %+v (%v), claims %d", d, err, len(b.of(event.PlanClaimed)))
	}
}
