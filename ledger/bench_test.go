package ledger_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkAppend measures Append with 1, 64 and 512 events per commit (one
// message each, Sync on every commit), 256-byte payloads. Signing and
// verification are the follower's cost and are left out.
func BenchmarkAppend(b *testing.B) {
	data, _ := json.Marshal(map[string]string{"pad": string(bytes.Repeat([]byte("x"), 244))})
	for _, size := range []int{1, 64, 512} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			st, err := ledger.Open(b.TempDir(), quietOptions())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			raw := bytes.Repeat([]byte("j"), 300*size)
			now := time.Now().UTC()
			seq := uint64(0)
			for b.Loop() {
				seq++
				prefix := "e" + strconv.FormatUint(seq, 10) + "-"
				m := ledger.Message{
					StreamSeq: seq, Subject: "agentic.ev.task.started", Time: now,
					Raw: raw, EnvelopeID: "m" + strconv.FormatUint(seq, 10),
					Events: make([]event.Event, size),
				}
				for i := range m.Events {
					m.Events[i] = event.Event{
						ID: prefix + strconv.Itoa(i), Type: event.TaskStarted, Run: "run-1", Node: "n1",
						Time: now, Subject: m.Subject, Data: data,
					}
				}
				if _, err := st.Append([]ledger.Message{m}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkCheckChain measures the chain checks of a 1M-record ledger
// (256-byte payloads, 8 events per message): Relink (every record below
// the verified checkpoint re-hashed, none decoded: what a node runs in the
// background after each start) and CheckChain with no checkpoint (every
// record checked in full: the first start with this check, or a start
// after a crash that left that many records unchecked). Set
// AGENTIC_BENCH_RECORDS to change the size.
func BenchmarkCheckChain(b *testing.B) {
	records := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("AGENTIC_BENCH_RECORDS")); err == nil && v > 0 {
		records = v
	}
	dir := b.TempDir()
	st, err := ledger.Open(dir, quietOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	data, _ := json.Marshal(map[string]string{"pad": string(bytes.Repeat([]byte("x"), 244))})
	raw := bytes.Repeat([]byte("j"), 1200)
	now := time.Now().UTC()
	var batch []ledger.Message
	for seq := 1; seq <= records/8; seq++ {
		m := ledger.Message{StreamSeq: uint64(seq), Subject: "agentic.ev.task.started", Time: now, Raw: raw, EnvelopeID: "m" + strconv.Itoa(seq)}
		for i := range 8 {
			m.Events = append(m.Events, event.Event{ID: "e" + strconv.Itoa(seq) + "-" + strconv.Itoa(i), Type: event.TaskStarted, Run: "run-" + strconv.Itoa(seq%1000), Node: "n1", Time: now, Subject: m.Subject, Data: data})
		}
		if batch = append(batch, m); len(batch) == 64 {
			if _, err := st.Append(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := st.Append(batch); err != nil {
		b.Fatal(err)
	}
	if err := ledger.CompactAll(st); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		reset bool
	}{{"relink", false}, {"checkchain-from-0", true}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			if _, err := st.CheckChain(ctx); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				check := st.Relink
				if tc.reset {
					b.StopTimer()
					if err := ledger.RawDelete(st, []byte(ledger.VerifiedKey)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					check = st.CheckChain
				}
				rep, err := check(ctx)
				if err != nil || !rep.OK {
					b.Fatal(rep, err)
				}
			}
			b.ReportMetric(float64(records), "records")
		})
	}
}

// BenchmarkAppendRejected measures the ledger's cost per refused message,
// in batches of 256: recorded one by one (a fresh window each message),
// counted in a run (one signer, past its rate), and counted with the
// window tracking its full set of signers (the largest limiter state).
func BenchmarkAppendRejected(b *testing.B) {
	const batch = 256
	raw := bytes.Repeat([]byte("f"), 600)
	for _, c := range []struct {
		name    string
		step    time.Duration
		signers int
	}{
		{"recorded", ledger.RejectWindow, 1},
		{"counted", 0, 1},
		{"counted-many-signers", 0, ledger.RejectSignersPerWindow},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, err := ledger.Open(b.TempDir(), quietOptions())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			t0 := time.Now().UTC()
			seq := uint64(0)
			msgs := make([]ledger.Message, batch)
			for b.Loop() {
				for i := range msgs {
					seq++
					msgs[i] = ledger.Message{
						StreamSeq: seq, Subject: "agentic.ev.task.started", Time: t0.Add(time.Duration(seq) * c.step), Raw: raw,
						Reject: &event.RejectedData{Code: event.RejectUnknownSigner, Reason: "forged", Subject: "agentic.ev.task.started", Signer: "kid-" + strconv.Itoa(int(seq)%c.signers)},
					}
				}
				if _, err := st.Append(msgs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/msg")
			head, _ := st.Head()
			b.ReportMetric(float64(head)/float64(seq), "records/msg")
		})
	}
}

// stepMessages signs and verifies the messages of steps shell steps of one
// run, as a node running them emits them: for each step a task.assigned
// (leader), a task.started and a task.finished (executor), one event per
// message, at stream seqs 1, 2, ….
func stepMessages(b *testing.B, steps int) []ledger.Message {
	b.Helper()
	kit := ledgertest.NewKit(b)
	run := event.NewID()
	now := time.Now().UTC()
	var msgs []ledger.Message
	add := func(d event.Draft) {
		raw, subject := kit.Sign(kit.Node, d)
		m := kit.Receive(uint64(len(msgs)+1), subject, raw, now)
		if m.Reject != nil {
			b.Fatal(m.Reject.Reason)
		}
		msgs = append(msgs, m)
	}
	for i := range steps {
		step := event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell, Run: "true"}
		add(event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{Decision: event.Decision{Epoch: 1, Basis: uint64(3 * i)}, Step: step, Attempt: 1, Node: "n1", ReadyAt: now}))
		add(event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: step.ID, Attempt: 1, Node: "n1", PID: 4000 + i}))
		add(event.MustDraft(event.TaskFinished, run, event.TaskFinishedData{Step: step.ID, Attempt: 1, Node: "n1", Status: event.TaskSucceeded,
			Started: now, Duration: event.Duration(3 * time.Millisecond), Cwd: "/work", CommandHash: "b5bb9d8014a0f9b1"}))
	}
	return msgs
}

// BenchmarkAppendSteps measures Append of the messages of shell steps
// (stepMessages) in batches of 1, 8 and 64 messages, on an in-memory file
// system so that the store's own CPU is measured, not the disk's. ns/op is
// per batch; ns/event per event.
func BenchmarkAppendSteps(b *testing.B) {
	pool := stepMessages(b, 1000)
	for _, size := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("msgs=%d", size), func(b *testing.B) {
			var st *ledger.Store
			open := func() {
				if st != nil {
					if err := st.Close(); err != nil {
						b.Fatal(err)
					}
				}
				var err error
				if st, err = ledger.Open("ledger", ledger.Options{Logger: slog.New(slog.DiscardHandler), FS: vfs.NewMem()}); err != nil {
					b.Fatal(err)
				}
			}
			open()
			defer func() { st.Close() }()
			next, events := 0, 0
			cpu := ledgertest.CPUPerOp(b)
			for b.Loop() {
				if next+size > len(pool) {
					b.StopTimer()
					open()
					next = 0
					b.StartTimer()
				}
				if _, err := st.Append(pool[next : next+size]); err != nil {
					b.Fatal(err)
				}
				next += size
				events += size
			}
			cpu()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
		})
	}
}
