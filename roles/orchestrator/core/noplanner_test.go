package core

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// noPlannerRun is a state with a leader, the default policy and run r1
// submitted at t0, and its ledger.
func noPlannerRun(t *testing.T, before ...func(*ledger, *State)) (*ledger, *State) {
	t.Helper()
	l, s := &ledger{}, policied()
	s.Apply(l.add(event.LeaderElected, "", "o1", t0, event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"}))
	for _, f := range before {
		f(l, s)
	}
	s.Apply(l.add(event.GoalSubmitted, "r1", "op", t0, event.GoalSubmittedData{Goal: "g", Text: "g"}))
	return l, s
}

// runEnd returns the run.finished among ds, if any.
func runEnd(t *testing.T, ds []Decision) *event.RunFinishedData {
	t.Helper()
	for _, d := range ds {
		if d.Draft.Type == event.RunFinished {
			var f event.RunFinishedData
			if err := json.Unmarshal(d.Draft.Data, &f); err != nil {
				t.Fatal(err)
			}
			return &f
		}
	}
	return nil
}

// expectNoPlannerAt checks that Decide leaves r1 alone just before due,
// waking then, and fails it with no_planner at due; it returns the end.
func expectNoPlannerAt(t *testing.T, s *State, due time.Time) *event.RunFinishedData {
	t.Helper()
	ds, wake := Decide(s, due.Add(-time.Millisecond), 1, nil)
	if f := runEnd(t, ds); f != nil || !wake.Equal(due) {
		t.Fatalf("before %v: finished %+v, wake %v", due, f, wake)
	}
	ds, _ = Decide(s, due, 1, nil)
	f := runEnd(t, ds)
	if f == nil || len(ds) != 1 || f.Status != event.RunFailed || f.Code != string(CodeNoPlanner) {
		t.Fatalf("at %v: %d decisions, finished %+v", due, len(ds), f)
	}
	return f
}

func TestNoPlannerFailsASubmittedRun(t *testing.T) {
	l, s := noPlannerRun(t)
	f := expectNoPlannerAt(t, s, t0.Add(45*time.Second))
	if !strings.Contains(f.Reason, "no planner answered the goal within 45s (the claim timeout 30s and a margin)") {
		t.Fatalf("reason %q", f.Reason)
	}
	// The fold ends the run with the code.
	s.TrackChanges()
	ds, _ := Decide(s, t0.Add(45*time.Second), 1, nil)
	s.Apply(l.commit(ds[0].Draft, "o1"))
	var end *Run
	for _, ch := range s.TakeChanges().Runs {
		if ch.Evicted {
			end = ch.Run
		}
	}
	if end == nil || end.Status != RunFailed || end.Code != CodeNoPlanner || s.Runs["r1"] != nil {
		t.Fatalf("after the fold: %+v", end)
	}
}

func TestNoPlannerWaitsForAClaim(t *testing.T) {
	_, s := noPlannerRun(t)
	l := &ledger{seq: s.Seq}
	claim := func(at time.Time, d event.PlanClaimedData) {
		s.Apply(l.add(event.PlanClaimed, "r1", "p1", at, d))
	}
	// A critique's claim and a claim of another revision say nothing of
	// the plan waited for.
	claim(t0.Add(time.Second), event.PlanClaimedData{Until: t0.Add(time.Hour), Source: "llm", Step: "check", Attempt: 1})
	claim(t0.Add(time.Second), event.PlanClaimedData{Until: t0.Add(time.Hour), Source: "llm", Revision: 2})
	if s.Runs["r1"].Awaiting != nil {
		t.Fatalf("awaiting %+v", s.Runs["r1"].Awaiting)
	}
	// A planner claims it until t0+20s, and dies: the wait starts again
	// when its claim lapses.
	claim(t0.Add(time.Second), event.PlanClaimedData{Until: t0.Add(20 * time.Second), Source: "llm"})
	claim(t0.Add(2*time.Second), event.PlanClaimedData{Until: t0.Add(10 * time.Second), Source: "llm", Revision: 1})
	expectNoPlannerAt(t, s, t0.Add(65*time.Second))

	// A proposal ends the wait.
	s.Apply(l.add(event.PlanProposed, "r1", "p1", t0.Add(3*time.Second), event.PlanProposedData{Revision: 1, Source: "llm",
		Plan: event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindShell, Run: "true"}}}}))
	if ds, _ := Decide(s, t0.Add(time.Hour), 1, nil); runEnd(t, ds) != nil {
		t.Fatalf("a planned run failed: %+v", ds)
	}
}

func TestNoPlannerClaimTimeoutIsAClusterSetting(t *testing.T) {
	settings := func(rev uint64, claim time.Duration) func(*ledger, *State) {
		return func(l *ledger, s *State) {
			s.Apply(l.add(event.ClusterSettings, "", "op", t0, event.ClusterSettingsData{Revision: rev,
				Planning: event.PlanningSettingsData{ClaimTimeout: event.Duration(claim)}}))
		}
	}
	// The highest revision holds; a later event of a lower or equal one
	// changes nothing.
	_, s := noPlannerRun(t, settings(2, 2*time.Second), settings(2, time.Hour), settings(1, time.Hour))
	f := expectNoPlannerAt(t, s, t0.Add(3*time.Second)) // 2s and the 1s floor of the margin
	if !strings.Contains(f.Reason, "within 3s (the claim timeout 2s") {
		t.Fatalf("reason %q", f.Reason)
	}
	// Settings without a claim timeout (older ones) mean the default.
	_, s = noPlannerRun(t, settings(2, 2*time.Second), settings(3, 0))
	expectNoPlannerAt(t, s, t0.Add(45*time.Second))
	if got := NoPlannerAfter(10 * time.Minute); got != 15*time.Minute {
		t.Errorf("NoPlannerAfter(10m) = %v", got)
	}
}

// replanning drives a run whose step a fails with on_failure replan until
// its replan request is folded; it returns the request's time.
func replanning(t *testing.T) (*comp, time.Time) {
	t.Helper()
	c := newComp(t, event.Step{ID: "a", Kind: event.KindShell, Run: "false", OnFailure: event.OnFailureReplan})
	c.outcome = succeedAll("a")
	for range 10 {
		for _, d := range c.decide() {
			if d.Draft.Type == event.PlanReplanRequested {
				return c, c.now
			}
		}
		c.work()
	}
	t.Fatalf("no replan request:\n%s", dumpRun(c.s.Runs["r1"]))
	return nil, time.Time{}
}

func TestNoPlannerFailsAReplan(t *testing.T) {
	c, asked := replanning(t)
	if w := c.s.Runs["r1"].Awaiting; w == nil || w.Revision != 2 || !w.Since.Equal(asked) {
		t.Fatalf("awaiting %+v, want revision 2 since %v", w, asked)
	}
	f := expectNoPlannerAt(t, c.s, asked.Add(45*time.Second))
	if !strings.HasPrefix(f.Reason, "step a failed: exit code 1; no planner answered the request for plan revision 2 within 45s") {
		t.Fatalf("reason %q", f.Reason)
	}

	// A claim of revision 2 pushes the end to its lapse.
	c.s.Apply(c.l.add(event.PlanClaimed, "r1", "p1", asked.Add(time.Second), event.PlanClaimedData{Until: asked.Add(time.Minute), Source: "llm", Revision: 2}))
	expectNoPlannerAt(t, c.s, asked.Add(time.Minute+45*time.Second))
}

// TestPlannersNoPlannerGivesTheCode: a live planner's no_planner
// rejection ends the run with code no_planner too, first plan or replan;
// another rejection with plan_rejected.
func TestPlannersNoPlannerGivesTheCode(t *testing.T) {
	for _, code := range []string{event.NoPlanner, ""} {
		want := CodeNoPlanner
		if code == "" {
			want = CodePlanRejected
		}
		l, s := noPlannerRun(t)
		s.TrackChanges()
		s.Apply(l.add(event.PlanRejected, "r1", "p1", t0.Add(30*time.Second), event.PlanRejectedData{Code: code, Error: "planner: no"}))
		var end *Run
		for _, ch := range s.TakeChanges().Runs {
			if ch.Evicted {
				end = ch.Run
			}
		}
		if end == nil || end.Code != want {
			t.Fatalf("code %q: first plan ended %+v", code, end)
		}

		c, asked := replanning(t)
		c.s.Apply(c.l.add(event.PlanRejected, "r1", "p1", asked.Add(time.Second), event.PlanRejectedData{Code: code, Error: "planner: no"}))
		ds, _ := Decide(c.s, asked.Add(2*time.Second), 1, nil)
		if f := runEnd(t, ds); f == nil || f.Code != string(want) || !strings.Contains(f.Reason, "replan rejected: planner: no") {
			t.Fatalf("code %q: replan ended %+v", code, f)
		}
	}
}

// TestNoPlannerStateSurvivesASnapshot: the setting and the claims are in
// the snapshot, so a restored leader decides the same.
func TestNoPlannerStateSurvivesASnapshot(t *testing.T) {
	_, s := noPlannerRun(t, func(l *ledger, s *State) {
		s.Apply(l.add(event.ClusterSettings, "", "op", t0, event.ClusterSettingsData{Revision: 4,
			Planning: event.PlanningSettingsData{ClaimTimeout: event.Duration(5 * time.Second)}}))
	})
	l := &ledger{seq: s.Seq}
	s.Apply(l.add(event.PlanClaimed, "r1", "p1", t0, event.PlanClaimedData{Until: t0.Add(10 * time.Second), Source: "llm"}))
	b, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.MarshalSnapshot()
	if err != nil || !bytes.Equal(b, again) {
		t.Fatalf("snapshot round trip differs (%v)", err)
	}
	if r.Planning == nil || r.Planning.Revision != 4 || r.Runs["r1"].Awaiting == nil {
		t.Fatalf("restored planning %+v, awaiting %+v", r.Planning, r.Runs["r1"].Awaiting)
	}
	expectNoPlannerAt(t, r, t0.Add(10*time.Second+5*time.Second+2500*time.Millisecond))
}

// TestNoPlannerWaitCountsFromTheElection: a leader elected after the goal
// gives the planners a whole wait from its election (a restarted cluster).
func TestNoPlannerWaitCountsFromTheElection(t *testing.T) {
	l, s := noPlannerRun(t)
	elected := t0.Add(10 * time.Minute)
	s.Apply(l.add(event.LeaderElected, "", "o2", elected, event.LeaderElectedData{Decision: event.Decision{Epoch: 2}, Leader: "o2"}))
	ds, wake := Decide(s, elected.Add(time.Second), 2, nil)
	if runEnd(t, ds) != nil || !wake.Equal(elected.Add(45*time.Second)) {
		t.Fatalf("after the election: %+v, wake %v", ds, wake)
	}
	ds, _ = Decide(s, elected.Add(45*time.Second), 2, nil)
	if f := runEnd(t, ds); f == nil || f.Code != string(CodeNoPlanner) {
		t.Fatalf("at the end of the wait: %+v", ds)
	}
}
