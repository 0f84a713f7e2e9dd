package improve

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// planted is a real ledger (Pebble) that a test plants signed events in:
// what the evaluation reads is what a node's follower would fold.
type planted struct {
	t      testing.TB
	kit    *ledgertest.Kit
	store  *ledger.Store
	stream uint64
	ops    map[string]*trust.Identity
	now    time.Time
	// folded is the position up to which fold has handed events out.
	folded uint64
}

func plant(t testing.TB) *planted {
	t.Helper()
	kit := ledgertest.NewKit(t)
	return &planted{t: t, kit: kit, store: ledgertest.Open(t), ops: map[string]*trust.Identity{"op": kit.Operator},
		now: time.Now().UTC().Add(-time.Hour).Truncate(time.Second)}
}

// operator returns the operator identity named id.
func (p *planted) operator(id string) *trust.Identity {
	if o := p.ops[id]; o != nil {
		return o
	}
	o := p.kit.Identity(id, trust.KindOperator, event.RoleOperator)
	p.ops[id] = o
	return o
}

// add appends one event signed by signer, a second after the last one,
// and returns its ledger position.
func (p *planted) add(signer *trust.Identity, typ event.Type, run string, v any) uint64 {
	p.t.Helper()
	d := event.MustDraft(typ, run, v)
	p.now = p.now.Add(time.Second)
	d.Time = p.now
	p.stream++
	evs, err := p.store.Append([]ledger.Message{p.kit.Message(p.stream, signer, d)})
	if err != nil {
		p.t.Fatal(err)
	}
	if len(evs) != 1 {
		p.t.Fatalf("append %s: %d events committed", typ, len(evs))
	}
	return evs[0].Seq
}

// emit appends an event signed by the node (every node role) or, for
// the operators' types, by the operator "op".
func (p *planted) emit(typ event.Type, run string, v any) uint64 {
	p.t.Helper()
	if slices.Contains(event.AllowedRoles(typ), event.RoleAdmin) {
		if p.ops["admin"] == nil {
			p.ops["admin"] = p.kit.Identity("admin", trust.KindOperator, event.RoleOperator, event.RoleAdmin)
		}
		return p.add(p.ops["admin"], typ, run, v)
	}
	if slices.Contains(event.AllowedRoles(typ), event.RoleOperator) {
		return p.add(p.kit.Operator, typ, run, v)
	}
	return p.add(p.kit.Node, typ, run, v)
}

// run plants a run of family with steps: its goal and plan.
func (p *planted) run(run, family string, steps ...event.Step) {
	p.t.Helper()
	for i := range steps {
		if steps[i].Kind == "" {
			steps[i].Kind = event.KindShell
		}
	}
	p.emit(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "g " + run, Family: family})
	p.emit(event.PlanProposed, run, event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Goal: "g", Family: family, Steps: steps}})
}

// attempt plants an attempt of step: its assignment and its end.
func (p *planted) attempt(run string, step event.Step, attempt int, fin event.TaskFinishedData) uint64 {
	p.t.Helper()
	if step.Kind == "" {
		step.Kind = event.KindShell
	}
	p.emit(event.TaskAssigned, run, event.TaskAssignedData{Decision: event.Decision{Epoch: 1}, Step: step, Attempt: attempt, Node: "n1"})
	fin.Step, fin.Attempt, fin.Node = step.ID, attempt, "n1"
	return p.emit(event.TaskFinished, run, fin)
}

func ok(d time.Duration) event.TaskFinishedData {
	return event.TaskFinishedData{Status: event.TaskSucceeded, Duration: event.Duration(d)}
}

func failed(exit int) event.TaskFinishedData {
	return event.TaskFinishedData{Status: event.TaskFailed, Class: event.ClassLogic, ExitCode: exit, Duration: event.Duration(time.Second), Error: "exit status"}
}

func timedOut(d time.Duration) event.TaskFinishedData {
	return event.TaskFinishedData{Status: event.TaskFailed, Class: event.ClassTransient, TimedOut: true, ExitCode: -1, Duration: event.Duration(d), Error: "timed out"}
}

// events returns the ledger's events from position from on.
func (p *planted) events(from uint64) []event.Event {
	p.t.Helper()
	var out []event.Event
	for r, err := range p.store.Scan(from) {
		if err != nil {
			p.t.Fatal(err)
		}
		out = append(out, r.Event)
	}
	return out
}

// telemetry folds the whole ledger into a telemetry window.
func (p *planted) telemetry() *Telemetry {
	t := NewTelemetry(0, 0)
	for _, ev := range p.events(1) {
		t.Fold(ev)
	}
	return t
}

// state folds the whole ledger into a State.
func (p *planted) state() *State {
	s := NewState()
	for _, ev := range p.events(1) {
		s.Apply(ev)
	}
	return s
}

// feed hands the loop what it has not folded yet.
func (p *planted) feed(l *Loop) {
	for _, ev := range p.events(p.folded + 1) {
		l.Fold(ev)
		p.folded = ev.Seq
	}
	l.Settled(true)
}

// capture is an Emitter that keeps the drafts and plants them, signed by
// the node, in the ledger.
type capture struct {
	p  *planted
	mu sync.Mutex
	// drafts are every draft emitted, in order.
	drafts []event.Draft
}

func (c *capture) Emit(_ context.Context, drafts ...event.Draft) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range drafts {
		c.drafts = append(c.drafts, d)
		c.p.now = c.p.now.Add(time.Second)
		d.Time = c.p.now
		c.p.stream++
		if _, err := c.p.store.Append([]ledger.Message{c.p.kit.Message(c.p.stream, c.p.kit.Node, d)}); err != nil {
			return err
		}
	}
	return nil
}

func (c *capture) types() []event.Type {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []event.Type
	for _, d := range c.drafts {
		out = append(out, d.Type)
	}
	return out
}

// onlyPattern returns the proposals of one pattern.
func onlyPattern(ps []event.ProposalCreatedData, pattern string) []event.ProposalCreatedData {
	var out []event.ProposalCreatedData
	for _, p := range ps {
		if p.Pattern == pattern {
			out = append(out, p)
		}
	}
	return out
}
