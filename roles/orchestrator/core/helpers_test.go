package core

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// t0 is the origin of test time.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ledger builds committed events with consecutive sequence numbers, as a
// ledger would.
type ledger struct {
	seq    uint64
	events []event.Event
	ids    map[string]bool
}

// has reports whether an event with id was committed (a real ledger
// refuses a second one).
func (l *ledger) has(id string) bool { return l.ids[id] }

func (l *ledger) record(ev event.Event) {
	if l.ids == nil {
		l.ids = map[string]bool{}
	}
	l.ids[ev.ID] = true
	l.events = append(l.events, ev)
}

// add commits an event of type typ for run, signed by node, at t.
func (l *ledger) add(typ event.Type, run, node string, t time.Time, payload any) event.Event {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	l.seq++
	ev := event.Event{
		Seq: l.seq, StreamSeq: l.seq, ID: fmt.Sprintf("ev-%d", l.seq),
		Type: typ, Run: run, Node: node, Time: t, Subject: event.Subject(typ, ""), Data: data,
	}
	l.record(ev)
	return ev
}

// commit turns a leader's draft into a committed event signed by leader.
func (l *ledger) commit(d event.Draft, leader string) event.Event {
	l.seq++
	ev := event.Event{
		Seq: l.seq, StreamSeq: l.seq, ID: d.ID, Type: d.Type, Run: d.Run, Node: leader,
		Time: d.Time, Subject: d.Subject(), Data: d.Data,
	}
	l.record(ev)
	return ev
}

// policyApplied is the policy.applied that records text as the first
// policy, as a leader's bootstrap does.
func policyApplied(seq uint64, text []byte) event.Event {
	p, err := policy.Parse(text, "test")
	if err != nil {
		panic(err)
	}
	data, err := json.Marshal(event.PolicyAppliedData{Name: p.Name, Hash: p.Hash(), Text: string(text), Source: event.PolicyFromBootstrap})
	if err != nil {
		panic(err)
	}
	return event.Event{Seq: seq, StreamSeq: seq, ID: fmt.Sprintf("policy-%d", seq), Type: event.PolicyRecorded,
		Node: "o1", Time: t0, Subject: event.Subject(event.PolicyRecorded, ""), Data: data}
}

// policied is a new state holding the shipped default policy (folded at
// position 0, so that the positions of the events after it are those of a
// ledger without it).
func policied() *State {
	s := NewState()
	s.Apply(policyApplied(0, policy.DefaultYAML()))
	return s
}

// testAssignKey is the key of an assignment Decide makes under the first
// policy of a run never paused.
func testAssignKey(run, step string, attempt int, node string) DecisionKey {
	k := assignKey(run, step, attempt, node)
	k.Policy = 1
	return k
}
