package node

import (
	"fmt"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
)

// ledgerOf is a ledger of n records, the stream sequence of record seq
// being streamOf(seq) (never decreasing), read by get, which counts its
// reads.
type ledgerOf struct {
	n        uint64
	streamOf func(seq uint64) uint64
	reads    int
}

func (l *ledgerOf) get(seq uint64) (ledger.Record, error) {
	if seq < 1 || seq > l.n {
		return ledger.Record{}, fmt.Errorf("no record %d", seq)
	}
	l.reads++
	return ledger.Record{Event: event.Event{Seq: seq, StreamSeq: l.streamOf(seq)}}, nil
}

// TestFirstRecordOf: the first record of a message is found wherever it
// is — at the head, deep in the history, of a message of several records,
// of a message the ledger holds nothing for, past the head.
func TestFirstRecordOf(t *testing.T) {
	// Records 1..1000: two per message from stream seq 10 on, messages
	// 10, 11, ... with stream seq 500 missing (refused, no record).
	const n = 1000
	streamOf := func(seq uint64) uint64 {
		s := 10 + (seq-1)/2
		if s >= 500 {
			s++
		}
		return s
	}
	for _, c := range []struct {
		stream, want uint64
	}{
		{1, 1}, {10, 1}, {11, 3}, {499, 979}, {500, 981}, {501, 981}, {510, 999}, {511, n + 1}, {9999, n + 1},
	} {
		l := &ledgerOf{n: n, streamOf: streamOf}
		got, err := firstRecordOf(l.get, n, c.stream)
		if err != nil || got != c.want {
			t.Errorf("first record of stream seq %d = %d, %v; want %d", c.stream, got, err, c.want)
		}
	}
	if got, err := firstRecordOf((&ledgerOf{}).get, 0, 5); err != nil || got != 1 {
		t.Errorf("empty ledger: %d, %v; want 1", got, err)
	}
	// Every small ledger of messages of 1–3 records, against a scan.
	for size := uint64(1); size <= 40; size++ {
		streamOf := func(seq uint64) uint64 { return 3 + seq/3 + seq/5 }
		for stream := uint64(0); stream <= streamOf(size)+2; stream++ {
			want := size + 1
			for seq := uint64(1); seq <= size; seq++ {
				if streamOf(seq) >= stream {
					want = seq
					break
				}
			}
			got, err := firstRecordOf((&ledgerOf{n: size, streamOf: streamOf}).get, size, stream)
			if err != nil || got != want {
				t.Fatalf("ledger of %d, stream seq %d: %d, %v; want %d", size, stream, got, err, want)
			}
		}
	}
}

// TestFirstRecordOfTheNewestReadsLittle: a write's outcome is asked just
// after the ledger folded it, in the very milliseconds the node works on
// what it started (a goal's acceptance, its first step): its records are
// found from the head, in a few reads, not by a binary search over the
// whole ledger (20 record reads and decodings at a million records).
func TestFirstRecordOfTheNewestReadsLittle(t *testing.T) {
	const n = 1_000_000
	l := &ledgerOf{n: n, streamOf: func(seq uint64) uint64 { return seq + 7 }}
	got, err := firstRecordOf(l.get, n, n+7)
	if err != nil || got != n {
		t.Fatalf("first record of the newest message = %d, %v; want %d", got, err, n)
	}
	if l.reads > 3 {
		t.Errorf("finding the newest message read %d records, want at most 3", l.reads)
	}
}
