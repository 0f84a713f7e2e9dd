package ledger

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// A catch-up's commits are large batches; Pebble keeps the last one (and
// flushed memtables) referenced after it is flushed. ReleaseMemory lets
// it go: the live heap falls by at least the batch's size, every record
// is still there, and appends go on. A closed store answers ErrClosed.
func TestReleaseMemoryDropsCatchUpBatches(t *testing.T) {
	st, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	data, _ := json.Marshal(map[string]string{"pad": string(bytes.Repeat([]byte("x"), 150))})
	raw := bytes.Repeat([]byte("j"), 200*385) // a signed message of 200 events
	now := time.Now().UTC()
	seq := 0
	batch := func(msgs int) []Message {
		var out []Message
		for range msgs {
			seq++
			m := Message{StreamSeq: uint64(seq), Subject: "agentic.ev.task.started", Time: now, Raw: raw, EnvelopeID: "m" + strconv.Itoa(seq)}
			for i := range 200 {
				m.Events = append(m.Events, event.Event{ID: "e" + strconv.Itoa(seq) + "-" + strconv.Itoa(i), Type: event.TaskStarted,
					Run: "run-" + strconv.Itoa(seq%50), Node: "n1", Time: now, Subject: m.Subject, Data: data})
			}
			out = append(out, m)
		}
		return out
	}
	for range 3 { // commits of 4,000 events, as a follower catching up makes
		if _, err := st.Append(batch(20)); err != nil {
			t.Fatal(err)
		}
	}
	before := liveHeap(t, st)
	if err := st.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	after := liveHeap(t, st)
	if freed := before - after; freed < 2<<20 {
		t.Errorf("ReleaseMemory freed %d KiB of live heap (%d → %d KiB), want at least the last commit's 2 MiB and more", freed>>10, before>>10, after>>10)
	}
	if recs := collectRecords(t, st); recs != seq*200 {
		t.Errorf("%d records after ReleaseMemory, want %d", recs, seq*200)
	}
	if _, err := st.Append(batch(1)); err != nil {
		t.Fatalf("Append after ReleaseMemory: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseMemory(); err != ErrClosed {
		t.Errorf("ReleaseMemory on a closed store: %v, want ErrClosed", err)
	}
}

// liveHeap is the live heap once no compaction runs and pools are empty.
func liveHeap(t *testing.T, st *Store) int64 {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "compactions done", func() bool {
		m := st.db.Metrics()
		return m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0
	})
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func collectRecords(t *testing.T, st *Store) int {
	t.Helper()
	n := 0
	for _, err := range st.Scan(1) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
