package planner

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"pgregory.net/rapid"
)

// historyGen draws a ledger history over a few run ids: goals (with a plan
// file, free text, or an undecodable payload), proposals, rejections,
// cancels, events the planner ignores, and events without a run.
func historyGen() *rapid.Generator[[]event.Event] {
	return rapid.Custom(func(t *rapid.T) []event.Event {
		var l ledger
		n := rapid.IntRange(0, 60).Draw(t, "n")
		out := make([]event.Event, 0, n)
		for range n {
			run := rapid.SampledFrom([]string{"r1", "r2", "r3", "r4", "r5", ""}).Draw(t, "run")
			var ev event.Event
			switch rapid.IntRange(0, 11).Draw(t, "kind") {
			case 0, 1:
				ev = l.event(event.GoalSubmitted, run, event.GoalSubmittedData{
					Goal: "g-" + run, PlanFile: fmt.Sprintf("steps: [{id: a, run: echo %d}]", l.seq+1), PlanName: "p.yaml"})
			case 2:
				ev = l.event(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "t", Text: "do it " + run})
			case 3:
				bad := rapid.SampledFrom([]any{"not an object", map[string]any{"goal": "half", "plan_file": 5}}).Draw(t, "bad")
				ev = l.event(event.GoalSubmitted, run, bad)
			case 4:
				ev = l.event(event.PlanProposed, run, event.PlanProposedData{Revision: 1, Source: "file"})
			case 5:
				ev = l.event(event.PlanRejected, run, event.PlanRejectedData{Error: "no"})
			case 6:
				ev = l.event(event.RunCancel, run, event.RunCancelData{})
			case 8:
				ev = l.event(event.CritiqueRequested, run, event.CritiqueRequestedData{
					Step: rapid.SampledFrom([]string{"c", "d"}).Draw(t, "step"), Attempt: rapid.IntRange(1, 3).Draw(t, "attempt"),
					Target: "a", Criteria: "ok"})
			case 9:
				ev = l.event(event.CritiqueRecorded, run, event.CritiqueRecordedData{
					Step: rapid.SampledFrom([]string{"c", "d"}).Draw(t, "step"), Attempt: rapid.IntRange(1, 3).Draw(t, "attempt"),
					Verdict: event.VerdictPass})
			case 10:
				ev = l.event(event.PlanClaimed, run, event.PlanClaimedData{Until: time.Unix(int64(l.seq), 0).UTC(), Source: "llm",
					Step: rapid.SampledFrom([]string{"", "c", "d"}).Draw(t, "step"), Attempt: rapid.IntRange(1, 3).Draw(t, "attempt")})
			case 11:
				ev = l.event(event.RunFinished, run, event.RunFinishedData{Status: event.RunSucceeded})
			default:
				ev = l.event(event.TaskFinished, run, event.TaskFinishedData{Step: "a", Status: event.TaskSucceeded})
			}
			out = append(out, ev)
		}
		return out
	})
}

func foldPlanner(p *Planner, events []event.Event) *Planner {
	for _, ev := range events {
		fold(p, ev)
	}
	return p
}

func newQuiet() *Planner { return New(roles.Env{Node: "n1"}, Config{}) }

func snap(t interface {
	Helper()
	Fatal(...any)
}, p *Planner) (uint64, []byte) {
	t.Helper()
	seq, b, err := p.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return seq, b
}

// plannedOrder is what the planner would plan, in order, with what:
// the observable outcome of the fold.
func plannedOrder(p *Planner) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	jobs, _ := p.mu.runs.take(time.Now(), 1<<30, claimer{self: "p", canPlan: func(event.GoalSubmittedData) bool { return true },
		canCritique: true, claimTimeout: time.Hour})
	var out []string
	for _, j := range jobs {
		bad := ""
		if j.bad != nil {
			bad = j.bad.Error()
		}
		out = append(out, fmt.Sprintf("%s %d %+v %q %+v", j.id, j.kind, j.goal, bad, j.critique))
	}
	return out
}

// TestPropertySnapshotPlusRestEqualsFoldFromZero: for any history and any
// cut, restoring a snapshot taken at the cut and folding the rest gives the
// state, the ledger position and the plans of a fold from zero.
func TestPropertySnapshotPlusRestEqualsFoldFromZero(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		events := historyGen().Draw(rt, "events")
		k := rapid.IntRange(0, len(events)).Draw(rt, "cut")

		full := foldPlanner(newQuiet(), events)
		wantSeq, want := snap(rt, full)

		cutSeq, mid := snap(rt, foldPlanner(newQuiet(), events[:k]))
		if k > 0 && cutSeq != events[k-1].Seq {
			rt.Fatalf("snapshot at cut %d reflects seq %d, want %d", k, cutSeq, events[k-1].Seq)
		}
		restored := newQuiet()
		if err := restored.Restore(mid); err != nil {
			rt.Fatalf("restore: %v", err)
		}
		foldPlanner(restored, events[k:])
		gotSeq, got := snap(rt, restored)
		if gotSeq != wantSeq || !bytes.Equal(got, want) {
			rt.Fatalf("cut %d of %d: snapshot then the rest differs from folding from zero:\n got %d %s\nwant %d %s",
				k, len(events), gotSeq, got, wantSeq, want)
		}
		if g, w := plannedOrder(restored), plannedOrder(full); !slices.Equal(g, w) {
			rt.Fatalf("cut %d: plans differ:\n got %q\nwant %q", k, g, w)
		}
	})
}

// TestSnapshotKeepsOnlyPendingRuns: closed runs leave nothing behind, in
// memory or in the snapshot.
func TestSnapshotKeepsOnlyPendingRuns(t *testing.T) {
	var l ledger
	p := newQuiet()
	file := event.GoalSubmittedData{PlanFile: "steps: [{id: a, run: x}]"}
	for i := range 100 {
		run := fmt.Sprintf("r%d", i)
		fold(p, l.event(event.GoalSubmitted, run, file))
		fold(p, l.event(event.PlanProposed, run, event.PlanProposedData{Revision: 1}))
	}
	d := event.MustDraft(event.GoalSubmitted, "open", file)
	d.Time = time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC)
	fold(p, l.commit(d))
	seq, b := snap(t, p)
	want := `{"version":4,"seq":201,"pending":[{"run":"open","seq":201,"at":"2026-11-23T09:30:00Z","goal":{"goal":"","plan_file":"steps: [{id: a, run: x}]"}}]}`
	if seq != 201 || string(b) != want {
		t.Fatalf("snapshot %d %s\nwant %s", seq, b, want)
	}
}

// TestRestoreRefusesBadSnapshots: unknown versions, garbage and
// inconsistent snapshots are refused, and the state stays as it was.
func TestRestoreRefusesBadSnapshots(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"future version", `{"version":5,"seq":1,"pending":[]}`, ErrSnapshotVersion},
		{"version 3, without critiques", `{"version":3,"seq":1,"pending":[]}`, ErrSnapshotVersion},
		{"version 1, without claims", `{"version":1,"seq":1,"pending":[]}`, ErrSnapshotVersion},
		{"version 2, without replans", `{"version":2,"seq":1,"pending":[]}`, ErrSnapshotVersion},
		{"no version", `{"seq":1,"pending":[]}`, ErrSnapshotVersion},
		{"garbage", "\x00\xffnot json", nil},
		{"empty", "", nil},
		{"wrong shape", `{"version":4,"pending":{"a":1}}`, nil},
		{"run without id", `{"version":4,"seq":3,"pending":[{"seq":1}]}`, nil},
		{"run twice", `{"version":4,"seq":3,"pending":[{"run":"a","seq":1},{"run":"a","seq":2}]}`, nil},
		{"critique twice", `{"version":4,"seq":3,"pending":[{"run":"a","seq":1,"critique":{"step":"c","attempt":1}},{"run":"a","seq":2,"critique":{"step":"c","attempt":2}}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l ledger
			p := newQuiet()
			fold(p, l.event(event.GoalSubmitted, "kept", event.GoalSubmittedData{PlanFile: "steps: [{id: a, run: x}]"}))
			beforeSeq, before := snap(t, p)
			err := p.Restore([]byte(tt.in))
			if err == nil {
				t.Fatalf("Restore(%q) succeeded", tt.in)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if seq, after := snap(t, p); seq != beforeSeq || !bytes.Equal(after, before) {
				t.Fatalf("state changed by a refused restore:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// TestRestoredRunIsPlanned: a run restored from a snapshot is planned once
// the node is live, with the goal it was submitted with, and a goal that
// did not decode is rejected with the same message as before the restart.
func TestRestoredRunIsPlanned(t *testing.T) {
	var l ledger
	before := newQuiet()
	before.Fold(l.event(event.GoalSubmitted, "good", event.GoalSubmittedData{Goal: "hello", PlanFile: "steps: [{id: a, run: x}]"}))
	before.Fold(l.event(event.GoalSubmitted, "bad", "not an object"))
	_, data := snap(t, before)
	wantBad := before.mu.runs.pending["bad"].bad.Error()

	ob := &outbox{}
	p := start(t, ob, Config{})
	if err := p.Restore(data); err != nil {
		t.Fatal(err)
	}
	p.Settled(true)
	if got := proposed(t, one(t, ob, "good")); got.Plan.Goal != "hello" || len(got.Plan.Steps) != 1 {
		t.Errorf("restored run planned as %+v", got.Plan)
	}
	msg := rejected(t, one(t, ob, "bad"))
	if msg != wantBad {
		t.Errorf("restored bad goal rejected with %q, want %q", msg, wantBad)
	}
}
