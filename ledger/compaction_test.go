package ledger

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A ledger with a history keeps appending at the end of each of its key
// spaces, so each compaction of L0 rewrites the last file of every space
// in the level below. This test appends shell-step-like records (three
// events a step, 2,000 steps a run, one message of one to four events)
// on top of a history and bounds the bytes compactions write per byte
// flushed: with Pebble's default L0 threshold it was 7.1 here (as in
// agentd on a 250k-event history), with the ledger's 2.55, and 1.8 once
// the records' and the messages' tables end where their spaces end
// (keySpaceSpans); it also bounds the tables those cuts add.
func TestCompactionsRewriteLittleOnAHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 90,000 events")
	}
	st, err := Open("ledger", Options{Logger: slog.New(slog.DiscardHandler), FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	data, _ := json.Marshal(map[string]string{"pad": string(bytes.Repeat([]byte("x"), 300))})
	raw := bytes.Repeat([]byte("j"), 900)
	var seq uint64
	types := []event.Type{event.TaskAssigned, event.TaskStarted, event.TaskFinished}
	run := ""
	appendSteps := func(steps int) {
		t.Helper()
		var msgs []Message
		for i := range steps {
			if i%2000 == 0 {
				run = event.NewID()
			}
			for _, ty := range types {
				seq++
				now := time.Now().UTC()
				subject := "agentic.ev." + string(ty)
				msgs = append(msgs, Message{StreamSeq: seq, Subject: subject, Time: now, Raw: raw, EnvelopeID: event.NewID(),
					Events: []event.Event{{ID: event.NewID(), Type: ty, Run: run, Node: "n1", Time: now, Subject: subject, Data: data}}})
			}
			if len(msgs) == 24 || i == steps-1 {
				if _, err := st.Append(msgs); err != nil {
					t.Fatal(err)
				}
				msgs = nil
			}
		}
	}
	settled := func() (flushed, compacted uint64) {
		t.Helper()
		poll.Eventually(t, time.Minute, "compactions done", func() bool {
			m := st.db.Metrics()
			return m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0
		})
		m := st.db.Metrics()
		for _, l := range m.Levels {
			flushed += l.TableBytesFlushed
			compacted += l.TableBytesCompacted
		}
		return flushed, compacted
	}
	appendSteps(20_000) // the history: 60,000 events
	f0, c0 := settled()
	appendSteps(30_000)
	f1, c1 := settled()
	ratio := float64(c1-c0) / float64(f1-f0)
	t.Logf("history %.1f MB flushed; then %.1f MB flushed, %.1f MB compacted: %.2f", float64(f0)/1e6, float64(f1-f0)/1e6, float64(c1-c0)/1e6, ratio)
	tables := st.db.Metrics().Total().TablesCount
	t.Logf("%d tables, %.1f MB", tables, float64(st.db.Metrics().Total().TablesSize)/1e6)
	if ratio > 2.2 {
		t.Fatalf("compactions wrote %.2f bytes per byte flushed, want at most 2.2", ratio)
	}
	// Cutting tables must not multiply them: 31 here before the cuts, 41
	// with them.
	if tables > 60 {
		t.Fatalf("%d tables, want at most 60", tables)
	}
}

// Tables are cut where the records' and the messages' key spaces begin
// and end, and nowhere else.
func TestKeySpaceEnd(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{prefixCredential + "x", "e/"},
		{"", "e/"},
		{string(eventKey(0)), "e0"},
		{string(eventKey(1 << 63)), "e0"},
		{"e0", "m/"},
		{string(hashKey(7)), "m/"},
		{string(seenKey("0190a-b")), "m/"},
		{"i/runs/p/\x05run-1", "m/"},
		{string(messageKey(0x2f2f2f2f)), "m0"},
		{"m0", ""},
		{"meta/head", ""},
		{string(typePrefix(event.TaskFinished)), ""},
		{string(timeKey(time.Unix(0, 0x2f2f), 3)), ""},
	} {
		end := keySpaceEnd([]byte(c.key))
		if string(end) != c.want {
			t.Errorf("keySpaceEnd(%q) = %q, want %q", c.key, end, c.want)
		}
		if end != nil && bytes.Compare(end, []byte(c.key)) <= 0 {
			t.Errorf("keySpaceEnd(%q) = %q, not after the key", c.key, end)
		}
	}
}
