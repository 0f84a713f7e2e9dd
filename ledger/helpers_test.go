package ledger_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"iter"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
)

// started makes n task.started drafts for run (executor role).
func started(run string, n int) []event.Draft {
	out := make([]event.Draft, n)
	for i := range out {
		out[i] = event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: fmt.Sprintf("s%d", i), Attempt: 1, Node: "n1"})
	}
	return out
}

func mustAppend(t testing.TB, st *ledger.Store, msgs ...ledger.Message) []event.Event {
	t.Helper()
	recs, err := st.Append(msgs)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return recs
}

func collect(t testing.TB, seq iter.Seq2[ledger.Record, error]) []ledger.Record {
	t.Helper()
	var out []ledger.Record
	for rec, err := range seq {
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		out = append(out, rec)
	}
	return out
}

func seqs(recs []ledger.Record) []uint64 {
	out := make([]uint64, len(recs))
	for i, r := range recs {
		out[i] = r.Event.Seq
	}
	return out
}

func rejectedData(t testing.TB, ev event.Event) event.RejectedData {
	t.Helper()
	if ev.Type != event.Rejected {
		t.Fatalf("record %d is %s, want %s", ev.Seq, ev.Type, event.Rejected)
	}
	var d event.RejectedData
	if err := ev.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// chainOf recomputes the chain over events as the package documents it.
func chainOf(t testing.TB, evs []event.Event) [32]byte {
	t.Helper()
	var h [32]byte
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		h = sha256.Sum256(append(h[:], b...))
	}
	return h
}
