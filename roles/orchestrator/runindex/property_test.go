package runindex

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"pgregory.net/rapid"
)

// drawHistory draws a history of actions (see history).
func drawHistory(rt *rapid.T, kit *ledgertest.Kit) *history {
	h := newHistory(rt, kit)
	pick := func(n int, label string) int { return rapid.IntRange(0, n-1).Draw(rt, label) }
	failures := []event.OnFailure{"", event.OnFailureContinue, event.OnFailureRetry}
	goals := []string{"Build it", "build docs", "ship", "SHIP again"}
	for range rapid.IntRange(10, 70).Draw(rt, "actions") {
		switch rapid.IntRange(0, 13).Draw(rt, "action") {
		case 0:
			id := h.submit(goals[pick(len(goals), "goal")])
			if pick(5, "plan?") > 0 {
				h.propose(id, 1, linearPlan(1+pick(5, "steps"), pick(2, "chain") == 0, failures[pick(len(failures), "on_failure")]))
			}
		case 1: // a new revision of a planned run
			for _, id := range h.liveRuns() {
				if r := h.s.Runs[id]; r.Status == "submitted" || r.Status == "planned" {
					h.propose(id, r.Revision+1, linearPlan(1+pick(5, "steps"), true, ""))
					break
				}
			}
		case 2:
			if live := h.liveRuns(); len(live) > 0 {
				h.reject(live[pick(len(live), "run")])
			}
		case 3, 4, 5:
			h.decide()
		case 6:
			if act := h.active(); len(act) > 0 {
				h.start(act[pick(len(act), "attempt")])
			}
		case 7, 8:
			if act := h.active(); len(act) > 0 {
				h.finish(act[pick(len(act), "attempt")], pick(10, "outcome")%6) // success most often
			}
		case 9:
			if live := h.liveRuns(); len(live) > 0 {
				h.cancel(live[pick(len(live), "run")])
			}
		case 10:
			switch pick(5, "other") {
			case 0:
				h.elect()
			case 1:
				h.memory()
			case 2:
				h.refused()
			case 3:
				h.gap()
			case 4: // a rating of any run, live or finished
				if h.runs > 0 {
					h.rate(fmt.Sprintf("r%d", 1+pick(h.runs, "rated run")), []event.Rating{event.RatingUp, event.RatingDown}[pick(2, "rating")])
				}
			}
		case 11:
			h.advance(time.Duration(pick(3, "seconds")) * time.Second)
		case 12:
			h.node([]event.Type{event.NodeFailed, event.NodeJoined}[pick(2, "node state")], executors[pick(len(executors), "node")])
		case 13:
			if held := h.held(); len(held) > 0 {
				a := held[pick(len(held), "held")]
				h.decided(a.run, a.step, []event.StepAction{event.StepRetry, event.StepSkip}[pick(2, "decision")])
			}
		}
	}
	return h
}

// chunks splits msgs into consecutive Appends of drawn sizes.
func chunks(rt *rapid.T, msgs []ledger.Message, label string) [][]ledger.Message {
	var out [][]ledger.Message
	for len(msgs) > 0 {
		n := min(len(msgs), rapid.IntRange(1, 40).Draw(rt, label))
		out = append(out, msgs[:n])
		msgs = msgs[n:]
	}
	return out
}

func openQuiet(rt *rapid.T, dir string) *ledger.Store {
	st, err := ledger.Open(dir, ledger.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		rt.Fatal(err)
	}
	return st
}

// TestPropertyEntriesIndependentOfRestarts: for random histories, the
// entries written by one uninterrupted stream of Appends equal those after
// restarts at random points (close, reopen, attach a fresh Index) and those
// of a rebuild from zero — and all equal the entries computed from the
// final state of every run. The index's in-memory state from a snapshot
// plus the rest equals its state from folding everything.
func TestPropertyEntriesIndependentOfRestarts(t *testing.T) {
	kit := ledgertest.NewKit(t)
	base := t.TempDir()
	statuses := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		h := drawHistory(rt, kit)
		dir, err := os.MkdirTemp(base, "p")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		want := model(h.recs)
		for k := range want {
			if strings.HasPrefix(k, prefixStatus) {
				statuses[strings.Split(k[len(prefixStatus):], "\x00")[0]]++
			}
		}

		// One uninterrupted stream.
		ref := openQuiet(rt, filepath.Join(dir, "ref"))
		defer ref.Close()
		xr := attach(rt, ref)
		for _, c := range chunks(rt, h.msgs, "ref chunk") {
			appendAll(rt, ref, c)
		}
		if got := entries(rt, ref); !reflect.DeepEqual(got, want) {
			rt.Fatalf("uninterrupted index differs from the model:%s", diff(got, want))
		}
		if len(xr.hot.live) != len(xr.hot.state.Runs) {
			rt.Fatalf("index tracks %d live runs, its state holds %d", len(xr.hot.live), len(xr.hot.state.Runs))
		}

		// Restarts at random points.
		rdir := filepath.Join(dir, "restarts")
		st := openQuiet(rt, rdir)
		attach(rt, st)
		for _, c := range chunks(rt, h.msgs, "restart chunk") {
			appendAll(rt, st, c)
			if rapid.IntRange(0, 2).Draw(rt, "restart") == 0 {
				if err := st.Close(); err != nil {
					rt.Fatal(err)
				}
				st = openQuiet(rt, rdir)
				attach(rt, st)
			}
		}
		got := entries(rt, st)
		st.Close()
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("index with restarts differs:%s", diff(got, want))
		}

		// A rebuild: the ledger written without the index, then attached.
		bdir := filepath.Join(dir, "rebuild")
		st = openQuiet(rt, bdir)
		appendAll(rt, st, h.msgs)
		st.Close()
		st = openQuiet(rt, bdir)
		attach(rt, st)
		got = entries(rt, st)
		st.Close()
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("rebuilt index differs:%s", diff(got, want))
		}

		// Snapshot at a random record, restore, fold the rest: the same
		// state as folding everything.
		full := New(nil)
		discard := &ledger.IndexWriter{}
		for _, rec := range h.recs {
			if err := full.Index(discard, rec); err != nil {
				rt.Fatal(err)
			}
		}
		k := rapid.IntRange(0, len(h.recs)).Draw(rt, "snapshot at")
		part := New(nil)
		for _, rec := range h.recs[:k] {
			if err := part.Index(discard, rec); err != nil {
				rt.Fatal(err)
			}
		}
		snap, err := part.Snapshot()
		if err != nil {
			rt.Fatal(err)
		}
		restored := New(nil)
		if err := restored.Restore(snap); err != nil {
			rt.Fatal(err)
		}
		for _, rec := range h.recs[k:] {
			if err := restored.Index(discard, rec); err != nil {
				rt.Fatal(err)
			}
		}
		a, _ := full.Snapshot()
		b, _ := restored.Snapshot()
		if !bytes.Equal(a, b) {
			rt.Fatalf("snapshot at %d of %d then the rest differs from folding everything:\n got %s\nwant %s", k, len(h.recs), b, a)
		}
		for id, lr := range full.hot.live {
			if got := restored.hot.live[id]; got == nil || got.created != lr.created || got.status != lr.status ||
				!slices.Equal(got.shown, lr.shown) || !maps.Equal(got.counts, lr.counts) {
				rt.Fatalf("snapshot at %d of %d then the rest: run %s is %+v, folding everything %+v", k, len(h.recs), id, got, lr)
			}
		}
	})
	// The histories must reach every run status, or the property says
	// little (with -short there are too few of them).
	for _, s := range []string{"submitted", "planned", "running", "succeeded", "failed", "cancelled"} {
		if statuses[s] == 0 && !testing.Short() {
			t.Errorf("no history left a run %s: %v", s, statuses)
		}
	}
	t.Logf("runs by final status: %v", statuses)
}
