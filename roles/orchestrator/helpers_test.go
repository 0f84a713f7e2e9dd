package orchestrator

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// ledger builds committed events with consecutive sequence numbers, as a
// ledger would (the core's tests have their own).
type ledger struct{ seq uint64 }

// add commits an event of type typ for run, signed by node, at t.
func (l *ledger) add(typ event.Type, run, node string, t time.Time, payload any) event.Event {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	l.seq++
	return event.Event{
		Seq: l.seq, StreamSeq: l.seq, ID: fmt.Sprintf("ev-%d", l.seq),
		Type: typ, Run: run, Node: node, Time: t, Subject: event.Subject(typ, ""), Data: data,
	}
}

// commit turns a leader's draft into a committed event signed by leader.
func (l *ledger) commit(d event.Draft, leader string) event.Event {
	l.seq++
	return event.Event{
		Seq: l.seq, StreamSeq: l.seq, ID: d.ID, Type: d.Type, Run: d.Run, Node: leader,
		Time: d.Time, Subject: d.Subject(), Data: d.Data,
	}
}
