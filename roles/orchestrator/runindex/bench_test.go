package runindex

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// benchIndex fills an index with runs runs of 3 steps (UUIDv7 ids, in
// batches of 100 per message: submitted, proposed, accepted, finished —
// nine in ten succeeded, the rest failed) and one run of bigSteps steps.
// It returns the index and the big run's id.
func benchIndex(b *testing.B, runs, bigSteps int) (*Index, string) {
	b.Helper()
	kit := ledgertest.NewKit(b)
	lead := kit.Identity("lead", trust.KindNode, event.NodeRoles...)
	st := ledgertest.Open(b)
	x := New(nil)
	if err := x.Attach(st); err != nil {
		b.Fatal(err)
	}
	var seq uint64
	now := time.Now()
	send := func(signer *trust.Identity, drafts []event.Draft) {
		raw, subject := kit.Sign(signer, drafts...)
		seq++
		m := kit.Receive(seq, subject, raw, now)
		if m.Reject != nil {
			b.Fatal(m.Reject.Reason)
		}
		if _, err := st.Append([]ledger.Message{m}); err != nil {
			b.Fatal(err)
		}
	}
	send(lead, []event.Draft{event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "lead"})})
	small := linearPlan(3, true, "")
	batch := func(n int, p event.Plan) string {
		ids := make([]string, n)
		var goals, plans, accepts, finishes []event.Draft
		for i := range ids {
			ids[i] = event.NewID()
			goals = append(goals, event.MustDraft(event.GoalSubmitted, ids[i], event.GoalSubmittedData{Goal: fmt.Sprintf("build thing %d", seq*100+uint64(i))}))
			plans = append(plans, event.MustDraft(event.PlanProposed, ids[i], event.PlanProposedData{Revision: 1, Source: "file", Plan: p}))
			accepts = append(accepts, event.MustDraft(event.PlanAccepted, ids[i], event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1}))
			status := event.RunSucceeded
			if i%10 == 9 {
				status = event.RunFailed
			}
			finishes = append(finishes, event.MustDraft(event.RunFinished, ids[i], event.RunFinishedData{Decision: event.Decision{Epoch: 1}, Status: status}))
		}
		send(kit.Operator, goals)
		send(kit.Node, plans)
		send(lead, accepts)
		send(lead, finishes)
		now = now.Add(time.Millisecond)
		return ids[0]
	}
	for done := 0; done < runs; done += 100 {
		batch(min(100, runs-done), small)
	}
	big := batch(1, linearPlan(bigSteps, true, ""))
	return x, big
}

// BenchmarkReads measures the reads on an index of 10,000 runs and one of
// 2,000 steps.
func BenchmarkReads(b *testing.B) {
	x, big := benchIndex(b, 10_000, 2_000)
	const page = 50
	first := func(q Query) (last Entry) {
		n := 0
		for e, err := range x.Runs(q) {
			if err != nil {
				b.Fatal(err)
			}
			last = e
			if n++; n == page {
				break
			}
		}
		if n != page {
			b.Fatalf("page of %d", n)
		}
		return last
	}
	var deep string
	n := 0
	for e, err := range x.Runs(Query{}) {
		if err != nil {
			b.Fatal(err)
		}
		if n++; n == 9_000 {
			deep = e.Cursor
			break
		}
	}
	b.Run("runs_first_page", func(b *testing.B) {
		for b.Loop() {
			first(Query{})
		}
	})
	b.Run("runs_deep_page", func(b *testing.B) {
		for b.Loop() {
			first(Query{After: deep})
		}
	})
	b.Run("runs_status_page", func(b *testing.B) {
		for b.Loop() {
			first(Query{Status: string(event.RunFailed)})
		}
	})
	b.Run("runs_goal_no_match", func(b *testing.B) { // ScanBudget runs read, then a checkpoint
		for b.Loop() {
			for e, err := range x.Runs(Query{Goal: "nothing like it"}) {
				if err != nil || e.Summary != nil {
					b.Fatal(e, err)
				}
			}
		}
	})
	b.Run("run_by_prefix", func(b *testing.B) {
		for b.Loop() {
			if _, err := x.Run(big[:13]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("steps_2000", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, err := range x.Steps(big, -1) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 2_000 {
				b.Fatalf("%d steps", n)
			}
		}
	})
}

// BenchmarkAppendRun measures what the index adds to the ledger's append
// path: a 2,000-step run (independent steps on 3 slots: every step
// assigned, started and finished, ~6,000 messages) appended in batches of
// 64 messages, into a ledger alone and into a ledger with the index.
func BenchmarkAppendRun(b *testing.B) {
	h := newHistory(b, ledgertest.NewKit(b))
	id := h.submit("big")
	h.propose(id, 1, linearPlan(2_000, false, ""))
	h.runToEnd()
	msgs := h.msgs
	for _, withIndex := range []bool{false, true} {
		name := "ledger_only"
		if withIndex {
			name = "with_index"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				st, err := ledger.Open(b.TempDir(), ledger.Options{Logger: ledgertest.Logger(b)})
				if err != nil {
					b.Fatal(err)
				}
				if withIndex {
					if err := New(nil).Attach(st); err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < len(msgs); i += 64 {
					if _, err := st.Append(msgs[i:min(i+64, len(msgs))]); err != nil {
						b.Fatal(err)
					}
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(h.recs)*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkIndexSteps measures what the index adds per event on the path
// of a running node: the messages of a 2,000-step run (independent steps,
// each assigned, started and finished, one event per message) appended in
// batches of 8 messages, into a ledger alone and into a ledger with the
// index, on an in-memory file system so that CPU is measured, not the
// disk. ns/event is per event; the index's share is the difference.
func BenchmarkIndexSteps(b *testing.B) {
	h := newHistory(b, ledgertest.NewKit(b))
	id := h.submit("big")
	h.propose(id, 1, linearPlan(2_000, false, ""))
	h.runToEnd()
	msgs := h.msgs
	const size = 8
	for _, withIndex := range []bool{false, true} {
		name := "ledger_only"
		if withIndex {
			name = "with_index"
		}
		b.Run(name, func(b *testing.B) {
			var st *ledger.Store
			open := func() {
				if st != nil {
					if err := st.Close(); err != nil {
						b.Fatal(err)
					}
				}
				var err error
				if st, err = ledger.Open("ledger", ledger.Options{Logger: ledgertest.Logger(b), FS: vfs.NewMem()}); err != nil {
					b.Fatal(err)
				}
				if withIndex {
					if err := New(nil).Attach(st); err != nil {
						b.Fatal(err)
					}
				}
			}
			open()
			defer func() { st.Close() }()
			next, events := 0, 0
			cpu := ledgertest.CPUPerOp(b)
			for b.Loop() {
				if next >= len(msgs) {
					b.StopTimer()
					open()
					next = 0
					b.StartTimer()
				}
				recs, err := st.Append(msgs[next:min(next+size, len(msgs))])
				if err != nil {
					b.Fatal(err)
				}
				next += size
				events += len(recs)
			}
			cpu()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
		})
	}
}
