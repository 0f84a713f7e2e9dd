package core

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// A plan.proposed as builds before protocol version 1 wrote it — durations
// as nanosecond integers — is accepted: the step's timeout and backoff read
// as the durations they were, and the state's snapshot writes them back as
// duration strings, which load again.
func TestOldNanosecondPlanAccepted(t *testing.T) {
	at := time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)
	s := policied()
	s.Apply(event.Event{Seq: 1, ID: "e1", Type: event.GoalSubmitted, Run: "r1", Node: "op", Time: at,
		Data: json.RawMessage(`{"goal":"g","plan_file":"x"}`)})
	s.Apply(event.Event{Seq: 2, ID: "e2", Type: event.PlanProposed, Run: "r1", Node: "planner-a", Time: at,
		Data: json.RawMessage(`{"revision":1,"source":"file","plan":{"goal":"g","steps":[` +
			`{"id":"build","kind":"shell","run":"make","timeout":90000000000,"retries":2,"backoff":2000000000,"on_failure":"abort"}]}}`)})
	r := s.Runs["r1"]
	if r == nil || r.View().Status != event.RunPlanned || r.Invalid != "" || len(r.Steps) != 1 {
		t.Fatalf("old plan.proposed not folded: %+v (ignored %d)", r, s.Ignored)
	}
	spec := r.Steps[0].Spec
	if spec.Timeout.Std() != 90*time.Second || spec.Backoff.Std() != 2*time.Second {
		t.Fatalf("durations read as timeout %v backoff %v", spec.Timeout, spec.Backoff)
	}
	if got := Backoff("r1", spec, 1); got < 1600*time.Millisecond || got > 2400*time.Millisecond {
		t.Fatalf("backoff from the old plan = %v", got)
	}
	snap, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snap), `"timeout":"1m30s"`) || !strings.Contains(string(snap), `"backoff":"2s"`) {
		t.Fatalf("snapshot durations: %s", snap)
	}
	back, err := UnmarshalSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Runs["r1"].Steps[0].Spec; got.Timeout != spec.Timeout || got.Backoff != spec.Backoff {
		t.Fatalf("after a snapshot round trip: %+v", got)
	}
	// A snapshot written before (nanoseconds) loads too.
	old := strings.Replace(strings.Replace(string(snap), `"timeout":"1m30s"`, `"timeout":90000000000`, 1), `"backoff":"2s"`, `"backoff":2000000000`, 1)
	if prev, err := UnmarshalSnapshot([]byte(old)); err != nil || prev.Runs["r1"].Steps[0].Spec.Timeout != spec.Timeout {
		t.Fatalf("an older snapshot: %v", err)
	}
}
