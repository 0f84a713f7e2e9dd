package ledger_test

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// TestScanEvents: ScanEvents yields the events Scan's records carry, from
// the position asked, in order, and stops when the loop does.
func TestScanEvents(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	run := event.NewID()
	mustAppend(t, st, kit.Message(1, kit.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "g"})),
		kit.Message(2, kit.Node, started(run, 3)...), kit.Message(3, kit.Node, started(run, 1)...))
	recs := collect(t, st.Scan(2))
	var got []event.Event
	for ev, err := range st.ScanEvents(2) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != len(recs) || len(got) != 4 {
		t.Fatalf("ScanEvents(2) gave %d events, Scan(2) %d records, want 4", len(got), len(recs))
	}
	for i, ev := range got {
		r := recs[i].Event
		if ev.Seq != r.Seq || ev.ID != r.ID || ev.Type != r.Type || ev.Run != r.Run || !ev.Time.Equal(r.Time) || string(ev.Data) != string(r.Data) {
			t.Errorf("event %d = %+v, want %+v", i, ev, r)
		}
	}
	n := 0
	for range st.ScanEvents(1) {
		if n++; n == 2 {
			break
		}
	}
	for ev, err := range st.ScanEvents(6) {
		t.Errorf("ScanEvents(6) yielded %+v %v, want nothing", ev, err)
	}
}
