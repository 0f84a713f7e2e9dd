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

// outbox is a slice-backed roles.Emitter: the role's own interface, not a
// stand-in for NATS or Pebble. hook, when set, runs before a draft is kept
// and may block or fail the emit.
type outbox struct {
	mu     sync.Mutex
	drafts []event.Draft
	calls  map[string]int // emit attempts per run
	hook   func(ctx context.Context, d event.Draft) error
	// planner, when set, has the claims emitted folded back, as the
	// ledger would (plan.claimed drafts are not kept in drafts).
	planner *Planner
	ledger  *ledger
	// claims counts the plan.claimed drafts folded back.
	claims int
}

// attach has the claims p emits folded back into p.
func (o *outbox) attach(p *Planner) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.planner = p
	if o.ledger == nil {
		o.ledger = &ledger{seq: 1 << 20} // claims' positions, after the test's own events
	}
}

// foldMu serialises the folds a test makes with those the outbox makes
// when it folds a claim back: a planner's Fold is called from one
// goroutine at a time, as the node does.
var foldMu sync.Mutex

// fold folds ev into p, serialised with the outbox's folds.
func fold(p *Planner, ev event.Event) {
	foldMu.Lock()
	defer foldMu.Unlock()
	p.Fold(ev)
}

func (o *outbox) Emit(ctx context.Context, drafts ...event.Draft) error {
	for _, d := range drafts {
		if d.Type == event.PlanClaimed {
			o.mu.Lock()
			p, l := o.planner, o.ledger
			o.claims++
			o.mu.Unlock()
			if p != nil {
				foldMu.Lock()
				ev := l.commit(d)
				ev.Node = p.env.Node
				p.Fold(ev)
				foldMu.Unlock()
			}
			continue
		}
		o.mu.Lock()
		if o.calls == nil {
			o.calls = map[string]int{}
		}
		o.calls[d.Run]++
		hook := o.hook
		o.mu.Unlock()
		if hook != nil {
			if err := hook(ctx, d); err != nil {
				return err
			}
		}
		o.mu.Lock()
		o.drafts = append(o.drafts, d)
		o.mu.Unlock()
	}
	return nil
}

// byRun returns the kept drafts of run.
func (o *outbox) byRun(run string) []event.Draft {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []event.Draft
	for _, d := range o.drafts {
		if d.Run == run {
			out = append(out, d)
		}
	}
	return out
}

func (o *outbox) runs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, d := range o.drafts {
		out = append(out, d.Run)
	}
	return out
}

func (o *outbox) attempts(run string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[run]
}

// ledger numbers events the way a ledger would. Safe for concurrent use:
// the outbox commits the claims it folds back.
type ledger struct {
	mu  sync.Mutex
	seq uint64
}

// event builds a committed event of type t for run with payload v.
func (l *ledger) event(t event.Type, run string, v any) event.Event {
	return l.commit(event.MustDraft(t, run, v))
}

// commit turns a draft into the committed event a ledger would fold.
func (l *ledger) commit(d event.Draft) event.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return event.Event{Seq: l.seq, StreamSeq: l.seq, ID: d.ID, Type: d.Type, Run: d.Run, Node: "n1", Time: d.Time, Subject: d.Subject(), Data: d.Data}
}

// start returns a started planner over ob, stopped at the end of the test.
func start(t *testing.T, ob *outbox, cfg Config) *Planner {
	t.Helper()
	p := New(roles.Env{Node: "n1", Emit: ob}, cfg)
	ob.attach(p)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return p
}

// one waits for run's single draft and returns it.
func one(t *testing.T, ob *outbox, run string) event.Draft {
	t.Helper()
	poll.Eventually(t, 10*time.Second, "a draft for "+run, func() bool { return len(ob.byRun(run)) > 0 })
	ds := ob.byRun(run)
	if len(ds) != 1 {
		t.Fatalf("run %s: %d drafts, want 1", run, len(ds))
	}
	return ds[0]
}

func proposed(t *testing.T, d event.Draft) event.PlanProposedData {
	t.Helper()
	if d.Type != event.PlanProposed {
		t.Fatalf("draft is %s, want %s: %s", d.Type, event.PlanProposed, d.Data)
	}
	var v event.PlanProposedData
	if err := json.Unmarshal(d.Data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func rejected(t *testing.T, d event.Draft) string {
	t.Helper()
	if d.Type != event.PlanRejected {
		t.Fatalf("draft is %s, want %s: %s", d.Type, event.PlanRejected, d.Data)
	}
	var v event.PlanRejectedData
	if err := json.Unmarshal(d.Data, &v); err != nil {
		t.Fatal(err)
	}
	return v.Error
}
