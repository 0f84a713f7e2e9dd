package planner

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// replanFunc is a ReplanSource made of functions, for tests.
type replanFunc struct {
	SourceFunc
	replan func(ctx context.Context, run string, req event.PlanReplanRequestedData) (*event.Plan, string, *event.PlannerInfo, error)
}

func (s replanFunc) Replan(ctx context.Context, run string, req event.PlanReplanRequestedData) (*event.Plan, string, *event.PlannerInfo, error) {
	return s.replan(ctx, run, req)
}

// add commits an event of type typ for run and folds it into every
// planner, as the orchestrator's events reach them.
func (b *bus) add(typ event.Type, run string, v any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := b.l.event(typ, run, v)
	b.events = append(b.events, ev)
	foldMu.Lock()
	for _, p := range b.planners {
		p.Fold(ev)
	}
	foldMu.Unlock()
}

// request is a replan request for revision 1 of run's plan, whose step b
// failed.
func request(source string, g event.GoalSubmittedData) event.PlanReplanRequestedData {
	return event.PlanReplanRequestedData{Revision: 1, Replans: 1, Goal: g, Source: source,
		Plan: event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindShell, Run: "true"}, {ID: "b", Kind: event.KindShell, Run: "false", DependsOn: []string{"a"}}}},
		Done: []string{"a"}, Failure: event.StepFailure{Step: "b", Attempt: 1, Command: "false", ExitCode: 1, Class: event.ClassLogic, Error: "exit code 1"}}
}

// TestReplanClaimedAndPlannedOnce: after a replan request, exactly one
// planner that can replan claims revision 2 and proposes it with the
// rationale, the revision it replaces and the failure; a planner without
// a model does not claim it.
func TestReplanClaimedAndPlannedOnce(t *testing.T) {
	b := &bus{}
	var calls atomic.Int32
	smart := func() replanFunc {
		return replanFunc{
			SourceFunc: SourceFunc{name: "llm", f: func(context.Context, string, event.GoalSubmittedData) (*event.Plan, error) {
				return &event.Plan{Steps: []event.Step{{ID: "a", Run: "true"}, {ID: "b", Run: "false", DependsOn: []string{"a"}}}}, nil
			}},
			replan: func(_ context.Context, _ string, req event.PlanReplanRequestedData) (*event.Plan, string, *event.PlannerInfo, error) {
				calls.Add(1)
				if req.Failure.Step != "b" || len(req.Done) != 1 {
					return nil, "", nil, errors.New("bad request")
				}
				return &event.Plan{Steps: []event.Step{{ID: "a", Run: "true"}, {ID: "b", Run: "true", DependsOn: []string{"a"}}}},
					"b cannot succeed as it was", &event.PlannerInfo{Model: "m"}, nil
			},
		}
	}
	ps := []*Planner{
		b.planner(t, "plain", Config{ClaimTimeout: time.Hour}),
		b.planner(t, "s1", Config{Text: smart(), ClaimTimeout: time.Hour}),
		b.planner(t, "s2", Config{Text: smart(), ClaimTimeout: time.Hour}),
	}
	g := event.GoalSubmittedData{Goal: "g", Text: "g"}
	b.submit("r", g)
	for _, p := range ps {
		p.Settled(true)
	}
	poll.Eventually(t, 10*time.Second, "revision 1", func() bool { return len(b.of(event.PlanProposed)) == 1 })
	b.add(event.PlanReplanRequested, "r", request("llm", g))
	poll.Eventually(t, 10*time.Second, "revision 2", func() bool { return len(b.of(event.PlanProposed)) == 2 })

	var rev2Claim string
	for _, c := range b.of(event.PlanClaimed) {
		var d event.PlanClaimedData
		if err := c.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if c.Node == "plain" {
			t.Fatalf("the planner without a model claimed revision %d", d.Revision)
		}
		if d.Revision == 2 && rev2Claim == "" {
			rev2Claim = c.Node
		}
	}
	pr := b.of(event.PlanProposed)[1]
	var d event.PlanProposedData
	if err := pr.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if pr.Node != rev2Claim || d.Revision != 2 || d.Replaces != 1 || d.Rationale != "b cannot succeed as it was" ||
		d.Failure == nil || d.Failure.Step != "b" || d.Planner == nil || d.Source != "llm" || d.Plan.Steps[1].Run != "true" {
		t.Fatalf("revision 2 by %s (claimed by %s): %+v", pr.Node, rev2Claim, d)
	}
	if calls.Load() != 1 || len(b.of(event.PlanRejected)) != 0 {
		t.Fatalf("%d replans, %d rejections", calls.Load(), len(b.of(event.PlanRejected)))
	}
}

// TestPlanFileRunIsNotReplanned: a replan request for a run whose plan
// came from a file is rejected at once, saying why, without a claim.
func TestPlanFileRunIsNotReplanned(t *testing.T) {
	b := &bus{}
	p := b.planner(t, "p1", Config{ClaimTimeout: time.Hour})
	p.Settled(true)
	b.add(event.PlanReplanRequested, "r", request("file", event.GoalSubmittedData{Goal: "g"}))
	poll.Eventually(t, 10*time.Second, "a rejection", func() bool { return len(b.of(event.PlanRejected)) == 1 })
	var d event.PlanRejectedData
	if err := b.of(event.PlanRejected)[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Error, ErrFileReplan.Error()) || !strings.Contains(d.Error, "fix the plan file") || len(b.of(event.PlanClaimed)) != 0 {
		t.Fatalf("rejection %q, %d claims", d.Error, len(b.of(event.PlanClaimed)))
	}
}

// TestReplanSurvivesSnapshot: a pending replan request is in the
// snapshot, and a restored planner plans it.
func TestReplanSurvivesSnapshot(t *testing.T) {
	b := &bus{}
	p := b.planner(t, "p1", Config{ClaimTimeout: time.Hour})
	b.add(event.PlanReplanRequested, "r", request("llm", event.GoalSubmittedData{Goal: "g", Text: "g"}))
	_, snap, err := p.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snap), `"replan":{`) {
		t.Fatalf("snapshot %s", snap)
	}
	src := replanFunc{SourceFunc: SourceFunc{name: "llm"}, replan: func(context.Context, string, event.PlanReplanRequestedData) (*event.Plan, string, *event.PlannerInfo, error) {
		return &event.Plan{Steps: []event.Step{{ID: "a", Run: "true"}}}, "simpler", nil, nil
	}}
	q := b.planner(t, "p2", Config{Text: src, ClaimTimeout: time.Hour})
	if err := q.Restore(snap); err != nil {
		t.Fatal(err)
	}
	q.Settled(true)
	poll.Eventually(t, 10*time.Second, "revision 2", func() bool { return len(b.of(event.PlanProposed)) == 1 })
	var d event.PlanProposedData
	if err := b.of(event.PlanProposed)[0].Decode(&d); err != nil || d.Revision != 2 || d.Rationale != "simpler" {
		t.Fatalf("proposal %+v: %v", d, err)
	}
}

// TestClaimOfAnotherRevisionIgnored: a late claim for revision 1 does not
// hold a run that waits for revision 2, and a proposal of revision 1 does
// not close it.
func TestClaimOfAnotherRevisionIgnored(t *testing.T) {
	rs := newRuns()
	req := request("llm", event.GoalSubmittedData{Text: "g"})
	rs.replan(&pending{id: "r", replan: &req, goal: req.Goal})
	now := time.Now()
	rs.claimed("r", 1, "other", now, now.Add(time.Hour))
	if rs.pending["r"].claim != nil {
		t.Fatal("a claim for revision 1 holds the replan")
	}
	rs.proposed("r", 1)
	if rs.pending["r"] == nil {
		t.Fatal("a proposal of revision 1 closed the replan")
	}
	rs.claimed("r", 2, "p", now, now.Add(time.Hour))
	if c := rs.pending["r"].claim; c == nil || c.by != "p" {
		t.Fatalf("claim = %+v", c)
	}
	rs.proposed("r", 2)
	if rs.pending["r"] != nil {
		t.Fatal("revision 2 did not close the replan")
	}
}
