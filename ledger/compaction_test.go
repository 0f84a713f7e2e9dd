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
// agentd on a 250k-event history), with the ledger's 2.55, and 0.30
// once tables end where key spaces end (keySpaceSpans).
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
	if ratio > 1 {
		t.Fatalf("compactions wrote %.2f bytes per byte flushed, want at most 1", ratio)
	}
}

// Tables are cut at the end of each key space: the end of the prefix
// through the first '/', the second for the type index, the third for an
// indexer's spaces; a key with fewer '/' than its space's depth ends at
// its last one, a key with none in no space.
func TestKeySpaceEnd(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{string(eventKey(7)), "e0"},
		{string(hashKey(1 << 47)), "h0"},
		{string(messageKey(0x2f2f2f2f)), "m0"},
		{string(seenKey("0190a-b")), "j0"},
		{string(appendRunPrefix(nil, "run/1")) + "\x00\x00\x00\x00\x00\x00\x00\x01", "r0"},
		{string(typePrefix(event.TaskFinished)) + "\x00\x00\x00\x00\x00\x00\x00\x2f", "t/" + string(event.TaskFinished) + "0"},
		{"t/", "t0"},
		{string(timeKey(time.Unix(0, 0x2f2f), 3)), "x0"},
		{"i/runs/p/\x05run-1\x00\x00\x00\x02", "i/runs/p0"},
		{"i/runs/s/running\x00pos/with/slashes", "i/runs/s0"},
		{"i/policies/key", "i/policies0"},
		{"meta/head", "meta0"},
		{"nospace", ""},
	} {
		if got := string(keySpaceEnd([]byte(c.key))); got != c.want {
			t.Errorf("keySpaceEnd(%q) = %q, want %q", c.key, got, c.want)
		}
		if end := keySpaceEnd([]byte(c.key)); end != nil && bytes.Compare(end, []byte(c.key)) <= 0 {
			t.Errorf("keySpaceEnd(%q) = %q, not after the key", c.key, end)
		}
	}
}
