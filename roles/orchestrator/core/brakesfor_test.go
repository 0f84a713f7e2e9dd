package core

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// brakeView is what an operator's brake changes in a run.
type brakeView struct {
	Status          RunStatus
	PauseReason     string
	Resumes         int
	CancelRequested bool
	CancelReason    string
}

func brakesOf(s *State) brakeView {
	r := s.Runs["r"]
	return brakeView{r.Status, r.PauseReason, r.Resumes, r.CancelRequested, r.CancelReason}
}

// TestBrakesThroughTheUI: run.paused_for, run.resumed_for and
// run.cancel_requested_for, which a ui node signs on an operator's behalf,
// fold exactly as that operator's own run.pause, run.resume and
// run.cancel (the operator named is the actor, not the ui node), and one
// that names no operator is ignored and counted.
func TestBrakesThroughTheUI(t *testing.T) {
	own, via := newGateFixture(t), newGateFixture(t)
	both := func(typ event.Type, payload any, forType event.Type, forPayload any) {
		t.Helper()
		for _, f := range []*gateFixture{own, via} {
			f.at = f.at.Add(time.Second)
		}
		ownIgnored, viaIgnored := own.s.Ignored, via.s.Ignored
		own.add(typ, "r", "bob", payload)
		via.add(forType, "r", "ui-1", forPayload)
		if a, b := brakesOf(own.s), brakesOf(via.s); a != b {
			t.Fatalf("after %s: through the ui %+v, the operator's own %+v", typ, b, a)
		}
		if a, b := own.s.Ignored-ownIgnored, via.s.Ignored-viaIgnored; a != b {
			t.Fatalf("after %s: ignored %d through the ui, %d the operator's own", typ, b, a)
		}
	}
	nobody := func(typ event.Type, payload any) {
		t.Helper()
		before, ignored := brakesOf(via.s), via.s.Ignored
		via.add(typ, "r", "ui-1", payload)
		if got := brakesOf(via.s); got != before || via.s.Ignored != ignored+1 {
			t.Fatalf("%s naming no operator changed the run (%+v → %+v) or was not counted", typ, before, got)
		}
	}

	nobody(event.RunPausedFor, event.RunBrakeForData{})
	both(event.RunPause, event.RunBrakeData{Reason: "checking"},
		event.RunPausedFor, event.RunBrakeForData{Operator: "bob", RunBrakeData: event.RunBrakeData{Reason: "checking"}})
	if v := brakesOf(via.s); v.Status != RunPaused || v.PauseReason != "paused by bob: checking" {
		t.Fatalf("after run.paused_for: %+v, want paused by bob", v)
	}
	// A second pause is ignored either way.
	both(event.RunPause, event.RunBrakeData{}, event.RunPausedFor, event.RunBrakeForData{Operator: "bob"})
	nobody(event.RunResumedFor, event.RunBrakeForData{})
	both(event.RunResume, event.RunBrakeData{Reason: "checked"},
		event.RunResumedFor, event.RunBrakeForData{Operator: "bob", RunBrakeData: event.RunBrakeData{Reason: "checked"}})
	if v := brakesOf(via.s); v.Status != RunRunning || v.Resumes != 1 {
		t.Fatalf("after run.resumed_for: %+v, want running, resumed once", v)
	}
	nobody(event.RunCancelRequestedFor, event.RunCancelForData{})
	both(event.RunCancel, event.RunCancelData{Reason: "wrong branch"},
		event.RunCancelRequestedFor, event.RunCancelForData{Operator: "bob", RunCancelData: event.RunCancelData{Reason: "wrong branch"}})
	if v := brakesOf(via.s); !v.CancelRequested || v.CancelReason != "wrong branch" {
		t.Fatalf("after run.cancel_requested_for: %+v, want a cancel requested", v)
	}
	// The leader decides the same on both: the run finishes cancelled.
	a, _ := Decide(own.s, own.at, 1, nil)
	b, _ := Decide(via.s, via.at, 1, nil)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("decisions: %d through the ui, %d the operator's own", len(b), len(a))
	}
	// The basis (a stream position) differs: via holds the events that
	// named nobody.
	noBasis := func(data []byte) string {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "basis")
		b, _ := json.Marshal(m)
		return string(b)
	}
	for i := range a {
		if a[i].Draft.Type != b[i].Draft.Type || noBasis(a[i].Draft.Data) != noBasis(b[i].Draft.Data) {
			t.Fatalf("decision %d: %s %s through the ui, %s %s the operator's own", i, b[i].Draft.Type, b[i].Draft.Data, a[i].Draft.Type, a[i].Draft.Data)
		}
	}
}
