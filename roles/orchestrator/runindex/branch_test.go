package runindex

import (
	"slices"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// TestBranchesOnDisk: a finished run that branched keeps, on disk, the
// skip reason of the steps not reached (code branch_not_taken) and the
// evidence each step gave for the hypotheses it tests.
func TestBranchesOnDisk(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.Open(t)
	x := attach(t, st)
	h := newHistory(t, kit)
	id := h.submit("debug")
	h.propose(id, 1, event.Plan{
		Hypotheses: []event.Hypothesis{{ID: "h", Statement: "it is broken"}},
		Steps: []event.Step{
			{ID: "probe", Kind: event.KindShell, Run: "true", Next: []event.Branch{{On: event.BranchOnSuccess, To: "ok"}, {On: event.BranchOnFailure, To: "fix"}},
				Tests: []event.HypothesisTest{{Hypothesis: "h", Success: event.EvidenceRefutes, Failure: event.EvidenceSupports}}},
			{ID: "ok", Kind: event.KindNoop, DependsOn: []string{"probe"}},
			{ID: "fix", Kind: event.KindShell, Run: "true", DependsOn: []string{"probe"}, Tests: []event.HypothesisTest{{Hypothesis: "h"}}},
		},
	})
	h.runToEnd()
	appendChunks(t, st, h.msgs)

	sum, err := x.Run(id)
	if err != nil || sum.Status != event.RunSucceeded {
		t.Fatalf("run %+v, %v; want succeeded", sum, err)
	}
	var views []core.StepView
	for se, err := range x.Steps(id, -1) {
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, se.View)
	}
	if len(views) != 3 {
		t.Fatalf("steps %+v", views)
	}
	probe, ok, fix := views[0], views[1], views[2]
	if probe.Status != "succeeded" || !slices.Equal(probe.Evidence, []core.StepEvidence{{Hypothesis: "h", Evidence: event.EvidenceRefutes}}) {
		t.Errorf("probe %+v", probe)
	}
	if ok.Status != "succeeded" || ok.Code != "" {
		t.Errorf("ok %+v", ok)
	}
	if fix.Status != "skipped" || fix.Code != event.SkipBranchNotTaken ||
		!slices.Equal(fix.Evidence, []core.StepEvidence{{Hypothesis: "h", Evidence: event.EvidenceNone}}) {
		t.Errorf("fix %+v", fix)
	}
	hyps := core.Hypotheses(event.Plan{Hypotheses: []event.Hypothesis{{ID: "h", Statement: "it is broken"}}, Steps: []event.Step{
		{ID: "probe", Tests: []event.HypothesisTest{{Hypothesis: "h"}}}, {ID: "fix", Tests: []event.HypothesisTest{{Hypothesis: "h"}}}}}, views)
	if len(hyps) != 1 || hyps[0].Verdict != core.VerdictRefuted || len(hyps[0].Evidence) != 2 {
		t.Errorf("hypotheses %+v", hyps)
	}
}
