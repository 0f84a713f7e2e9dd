package ledger_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"pgregory.net/rapid"
)

// messagePool signs a fixed set of messages once: singles, batches, batches
// that repeat event ids of others, and refused messages. Picking one twice in
// a stream is a replay.
func messagePool(t *testing.T) (*ledgertest.Kit, []ledger.Message) {
	kit := ledgertest.NewKit(t)
	var pool []ledger.Message
	singles := started("r1", 6)
	for i, d := range singles {
		if i%2 == 1 {
			d.Run = "r2"
		}
		pool = append(pool, kit.Message(0, kit.Node, d))
	}
	for range 4 {
		pool = append(pool, kit.Message(0, kit.Node, started("r3", 3)...))
	}
	// Batches that repeat ids: one of a single, one of a batch.
	pool = append(pool, kit.Message(0, kit.Node, append([]event.Draft{singles[0]}, started("r1", 1)...)...))
	first := pool[6].Events[1]
	again := event.Draft{ID: first.ID, Type: first.Type, Run: first.Run, Time: first.Time, Data: first.Data}
	pool = append(pool, kit.Message(0, kit.Node, append(started("r2", 1), again)...))
	for _, raw := range []string{"forged", "a.b.c"} {
		pool = append(pool, kit.Receive(0, "agentic.ev.task.started", []byte(raw), time.Now()))
	}
	return kit, pool
}

// streamGen draws a stream: pool picks with increasing stream seqs and
// occasional holes.
func streamGen(pool []ledger.Message) *rapid.Generator[[]ledger.Message] {
	return rapid.Custom(func(t *rapid.T) []ledger.Message {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		var out []ledger.Message
		seq := uint64(0)
		for range n {
			seq += 1 + uint64(rapid.IntRange(0, 9).Draw(t, "skip")/8) // a hole 1 time in 5
			out = append(out, ledgertest.Redeliver(pool[rapid.IntRange(0, len(pool)-1).Draw(t, "pick")], seq))
		}
		return out
	})
}

func quietOptions() ledger.Options { return ledger.Options{Logger: slog.New(slog.DiscardHandler)} }

func TestPropertyOneHeadForAnyDelivery(t *testing.T) {
	kit, pool := messagePool(t)
	base := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		stream := streamGen(pool).Draw(rt, "stream")
		dir, err := os.MkdirTemp(base, "p")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)

		// Reference: the whole stream in one call.
		ref, err := ledger.Open(dir+"/ref", quietOptions())
		if err != nil {
			rt.Fatal(err)
		}
		defer ref.Close()
		if _, err := ref.Append(stream); err != nil {
			rt.Fatal(err)
		}

		// Same stream in random chunks, with redelivery and restarts.
		st, err := ledger.Open(dir+"/b", quietOptions())
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { st.Close() }()
		var returned []event.Event
		for pos := 0; pos < len(stream); {
			end := pos + rapid.IntRange(1, len(stream)-pos).Draw(rt, "chunk")
			from := pos
			if rapid.Bool().Draw(rt, "redeliver") {
				from = rapid.IntRange(0, pos).Draw(rt, "from")
			}
			recs, err := st.Append(stream[from:end])
			if err != nil {
				rt.Fatal(err)
			}
			returned = append(returned, recs...)
			pos = end
			if rapid.IntRange(0, 9).Draw(rt, "restart") == 0 {
				if err := st.Close(); err != nil {
					rt.Fatal(err)
				}
				if st, err = ledger.Open(dir+"/b", quietOptions()); err != nil {
					rt.Fatal(err)
				}
			}
		}

		rs, rh := ref.Head()
		bs, bh := st.Head()
		if rs != bs || rh != bh || ref.AppliedStreamSeq() != st.AppliedStreamSeq() {
			rt.Fatalf("heads differ: one call %d %x, chunked %d %x", rs, rh, bs, bh)
		}
		stored := collect(t, st.Scan(1))
		refRecs := collect(t, ref.Scan(1))
		if len(returned) != len(stored) {
			rt.Fatalf("Append returned %d records, ledger holds %d", len(returned), len(stored))
		}
		for i := range stored {
			a, _ := json.Marshal(returned[i])
			b, _ := json.Marshal(stored[i].Event)
			c, _ := json.Marshal(refRecs[i].Event)
			if !bytes.Equal(a, b) || !bytes.Equal(b, c) {
				rt.Fatalf("record %d: returned %s, stored %s, reference %s", i+1, a, b, c)
			}
		}
		checkModel(rt, stream, stored)
		if rep, err := st.Verify(kit.Verifier); err != nil || !rep.OK || rep.Head != bh {
			rt.Fatalf("Verify = %+v %v", rep, err)
		}
	})
}

// checkModel: every distinct event id of a verified message is accepted
// exactly once, in the order of its first appearance, each hole is one Gap
// record, and nothing else is accepted.
func checkModel(rt *rapid.T, stream []ledger.Message, recs []ledger.Record) {
	var want []string
	seen := map[string]bool{}
	gaps, prev := 0, uint64(0)
	for _, m := range stream {
		if m.StreamSeq > prev+1 {
			gaps++
		}
		prev = m.StreamSeq
		if m.Reject != nil {
			continue
		}
		for _, ev := range m.Events {
			if !seen[ev.ID] {
				seen[ev.ID] = true
				want = append(want, ev.ID)
			}
		}
	}
	var got []string
	gotGaps := 0
	for _, r := range recs {
		switch r.Event.Type {
		case event.Gap:
			gotGaps++
		case event.Rejected, event.RejectedSummary:
		default:
			got = append(got, r.Event.ID)
		}
	}
	if len(got) != len(want) || gotGaps != gaps {
		rt.Fatalf("accepted %d events and %d gaps, want %d and %d", len(got), gotGaps, len(want), gaps)
	}
	for i := range want {
		if got[i] != want[i] {
			rt.Fatalf("accepted event %d is %s, want %s", i, got[i], want[i])
		}
	}
}
