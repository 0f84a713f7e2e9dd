package improve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// residentAttempts is how many attempts the loop holds between turns:
// its folded window's and its monitor's.
func residentAttempts(l *Loop) int {
	l.tm.Lock()
	defer l.tm.Unlock()
	n := len(l.tm.tel.Attempts) + len(l.tm.tel.Gates) + len(l.tm.tel.Replans) + len(l.tm.tel.Ratings) + len(l.tm.tel.Commands)
	if l.tm.watch != nil {
		n += len(l.tm.watch.tel.Attempts)
	}
	return n
}

// TestWindowNotResident: with a Ledger, the leader evaluates what it
// reads from the ledger (the proposal is found) and keeps none of it
// after the turn; a follower keeps nothing either.
func TestWindowNotResident(t *testing.T) {
	pl := plant(t)
	plantTimeouts(pl)
	c := &capture{p: pl}
	leader := New(Config{Node: "n1", Emit: c, Ledger: pl.store, Now: func() time.Time { return pl.now }})
	follower := New(Config{Node: "n2", Emit: &capture{p: pl}, Ledger: pl.store, Leading: func() bool { return false },
		Now: func() time.Time { return pl.now }})
	for _, ev := range pl.events(1) {
		follower.Fold(ev)
	}
	follower.Settled(true)
	pl.feed(leader)
	ctx := context.Background()
	for _, l := range []*Loop{leader, follower} {
		if err := l.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.types(); len(got) != 1 || got[0] != event.ProposalCreated {
		t.Fatalf("the leader emitted %v, want one proposal.created from the window it read", got)
	}
	if n := residentAttempts(leader); n != 0 {
		t.Errorf("the leader keeps %d records of the window after its turn, want none", n)
	}
	if n := residentAttempts(follower); n != 0 {
		t.Errorf("a follower keeps %d records of the window, want none", n)
	}
}

// TestRestartEvaluatesTheWholeWindow: a node restarted from a snapshot
// (or a follower that becomes the leader) evaluates the whole window,
// not only what came after the snapshot.
func TestRestartEvaluatesTheWholeWindow(t *testing.T) {
	p := plant(t)
	plantTimeouts(p)
	a := New(Config{Node: "n1", Emit: &capture{p: p}, Ledger: p.store, Leading: func() bool { return false },
		Now: func() time.Time { return p.now }})
	p.feed(a)
	_, data, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	c := &capture{p: p}
	b := New(Config{Node: "n1", Emit: c, Ledger: p.store, Now: func() time.Time { return p.now }})
	if err := b.Restore(data); err != nil {
		t.Fatal(err)
	}
	b.Settled(true)
	if err := b.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); len(got) != 1 || got[0] != event.ProposalCreated {
		t.Fatalf("the restarted leader emitted %v, want the proposal of the window before its snapshot", got)
	}
}

// TestRestartKeepsTheMonitor: an applied proposal whose regression came
// before a restart (or a leader change) is reverted by the new leader:
// the monitor reads the attempts since the proposal's apply from the
// ledger.
func TestRestartKeepsTheMonitor(t *testing.T) {
	p := plant(t)
	plantTimeouts(p)
	fetch := event.Step{ID: "fetch", Run: "./fetch.sh"}
	mon := Monitor{Threshold: 0.25, MinBaseline: 3, MinAfter: 3, MaxWatch: time.Hour}
	c := &capture{p: p}
	l := New(Config{Node: "n1", Emit: c, Ledger: p.store, Now: func() time.Time { return p.now }, Monitor: mon})
	ctx := context.Background()
	step := func(l *Loop) {
		t.Helper()
		p.feed(l)
		if err := l.Step(ctx); err != nil {
			t.Fatal(err)
		}
		p.feed(l)
	}
	step(l)
	ps := l.Proposals()
	if len(ps) != 1 {
		t.Fatalf("proposals %+v, want one", ps)
	}
	id := ps[0].ID
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: id})
	step(l)
	if got, _ := l.Proposal(id); got.Status != StatusApplied {
		t.Fatalf("status %s, want applied", got.Status)
	}
	// Attempts of another family: the monitor keeps none of them.
	other := event.Step{ID: "other", Run: "./other.sh"}
	for i := range 3 {
		run := fmt.Sprintf("other%d", i)
		p.run(run, "weekly", other)
		p.attempt(run, other, 1, failed(1))
	}
	step(l)
	if n := residentAttempts(l); n != 0 {
		t.Errorf("the monitor keeps %d attempts of a family no applied proposal touched, want none", n)
	}
	// The regression, then the leader goes: the next one starts from a
	// snapshot taken after it.
	for i := range 3 {
		run := fmt.Sprintf("bad%d", i)
		p.run(run, "nightly", fetch)
		p.attempt(run, fetch, 1, failed(1))
	}
	p.feed(l)
	_, data, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	next := New(Config{Node: "n2", Emit: c, Ledger: p.store, Now: func() time.Time { return p.now }, Monitor: mon})
	if err := next.Restore(data); err != nil {
		t.Fatal(err)
	}
	next.Settled(true)
	if err := next.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(next)
	got, _ := next.Proposal(id)
	if got.Status != StatusReverted || got.Outcome == nil || got.Outcome.After.Errors != 3 {
		t.Fatalf("after the restart: status %s outcome %+v, want reverted with 3 errors after", got.Status, got.Outcome)
	}
	// Nothing is applied any more: the monitor keeps nothing.
	if err := next.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := residentAttempts(next); n != 0 {
		t.Errorf("the monitor keeps %d attempts with no proposal applied, want none", n)
	}
}

// TestWindowRunStartedBefore: a run that started before the window (its
// goal and plan older than the window) still has its family for the
// attempts inside the window: its earlier events are read for it.
func TestWindowRunStartedBefore(t *testing.T) {
	p := plant(t)
	fetch := event.Step{ID: "fetch", Run: "./fetch.sh"}
	for i := range 3 {
		p.run(fmt.Sprintf("long%d", i), "nightly", fetch)
	}
	// A window that starts after the plans were stored (their stream
	// time is before start, the attempts' after it): the attempts are
	// in it, the goals and plans are not.
	start := time.Now()
	p.now = start.Add(time.Second)
	for i := range 3 {
		p.attempt(fmt.Sprintf("long%d", i), fetch, 1, timedOut(2*time.Second))
	}
	now := p.now
	tel, err := ReadWindow(context.Background(), p.store, now.Sub(start), now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tel.Attempts) != 3 || tel.Attempts[0].Family != "nightly" || len(tel.Attempts[0].Shapes) == 0 {
		t.Fatalf("attempts %+v, want 3 of family nightly with their shapes", tel.Attempts)
	}
	if ps := onlyPattern(Evaluate(DefaultRules(), tel, Input{Now: now, State: NewState()}), PatternTimeouts); len(ps) != 1 {
		t.Fatalf("timeouts proposals %+v, want one", ps)
	}
}
