package runindex

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
	"github.com/agentic-dev/agentic/roles/policy"
)

// gatePage decodes one gates.list page.
func gatePage(t *testing.T, x *Index, req api.GatesRequest) api.Page[api.Gate] {
	t.Helper()
	raw, err := x.GatesPage(context.Background(), req)
	if err != nil {
		t.Fatalf("GatesPage(%+v): %v", req, err)
	}
	out := api.Page[api.Gate]{Next: raw.Next, End: raw.End}
	for _, it := range raw.Items {
		var g api.Gate
		if err := json.Unmarshal(it, &g); err != nil {
			t.Fatal(err)
		}
		out.Items = append(out.Items, g)
	}
	return out
}

// TestGatesListed: a step the policy gates shows as gated and its gate is
// listed (with the verdict, the step as it would run, the approvers so
// far) until the approvals are in; then the key is gone, also after a
// restart from the snapshot, and the entries equal those of a rebuild.
func TestGatesListed(t *testing.T) {
	kit := ledgertest.NewKit(t)
	dir := t.TempDir()
	st := ledgertest.OpenDir(t, dir)
	x := attach(t, st)
	h := newHistory(t, kit)
	plain := h.submit("plain")
	h.propose(plain, 1, linearPlan(1, false, ""))
	wipe := h.submit("wipe")
	h.propose(wipe, 1, event.Plan{Steps: []event.Step{
		{ID: "a", Kind: event.KindShell, Run: "rm -rf build"},
		{ID: "b", Kind: event.KindShell, Run: "git push --force origin main"},
	}})
	for range 3 {
		h.decide() // the policy, the plans, the gates
		h.advance(time.Second)
	}
	appendChunks(t, st, h.msgs)
	h.msgs = nil

	if s, err := x.Run(wipe); err != nil || s.StepCounts[string(core.StepGated)] != 2 {
		t.Fatalf("Run(%s) = %+v, %v; want 2 gated steps", wipe, s, err)
	}
	all := gatePage(t, x, api.GatesRequest{})
	if len(all.Items) != 2 || !all.End || all.Items[0].Step != "a" || all.Items[1].Step != "b" {
		t.Fatalf("gates %+v, want a and b of %s", all, wipe)
	}
	if n, oldest, err := x.OpenGates(); err != nil || n != 2 || oldest.IsZero() ||
		(!oldest.Equal(all.Items[0].Opened) && !oldest.Equal(all.Items[1].Opened)) {
		t.Fatalf("OpenGates = %d, %v, %v; want 2 and the older opening", n, oldest, err)
	}
	g := all.Items[0]
	if g.Run != wipe || g.Goal != "wipe" || g.Kind != event.GatePolicy || g.Verdict == nil || g.Verdict.Rule != "recursive-force-delete" ||
		g.Spec == nil || g.Spec.Run != "rm -rf build" || g.Approvals != 1 || g.Subject == "" || g.Policy.Version != 1 || g.Opened.IsZero() {
		t.Fatalf("gate %+v", g)
	}
	first := gatePage(t, x, api.GatesRequest{Limit: 1})
	if len(first.Items) != 1 || first.End || first.Next == "" {
		t.Fatalf("first page %+v", first)
	}
	second := gatePage(t, x, api.GatesRequest{Limit: 1, Cursor: first.Next})
	if len(second.Items) != 1 || second.Items[0].Step != "b" {
		t.Fatalf("second page %+v", second)
	}
	if one := gatePage(t, x, api.GatesRequest{Run: wipe, Step: "b"}); len(one.Items) != 1 || one.Items[0].Step != "b" {
		t.Fatalf("gates of %s/b: %+v", wipe, one)
	}
	if none := gatePage(t, x, api.GatesRequest{Run: plain}); len(none.Items) != 0 || !none.End {
		t.Fatalf("gates of %s: %+v", plain, none)
	}
	for _, bad := range []api.GatesRequest{{Run: "nope"}, {Cursor: "!!"}, {Step: "a"}} {
		if _, err := x.GatesPage(context.Background(), bad); err == nil {
			t.Errorf("GatesPage(%+v): no error", bad)
		}
	}

	// The operator approves a: its gate goes; b's stays.
	h.emit(h.kit.Operator, event.MustDraft(event.GateDecided, wipe, event.GateDecidedData{Step: "a", Subject: g.Subject, Action: event.GateAccept}))
	appendChunks(t, st, h.msgs)
	h.msgs = nil
	if left := gatePage(t, x, api.GatesRequest{}); len(left.Items) != 1 || left.Items[0].Step != "b" {
		t.Fatalf("after approving a: %+v", left)
	}
	if got, want := entries(t, st), model(h.recs); !maps.Equal(got, want) {
		t.Fatalf("entries differ from the model:%s", diff(got, want))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = ledgertest.OpenDir(t, dir)
	x = attach(t, st)
	h.emit(h.kit.Operator, event.MustDraft(event.GateDecided, wipe, event.GateDecidedData{Step: "b", Subject: all.Items[1].Subject, Action: event.GateSkip}))
	appendChunks(t, st, h.msgs)
	if left := gatePage(t, x, api.GatesRequest{}); len(left.Items) != 0 || !left.End {
		t.Fatalf("after skipping b: %+v", left)
	}
	if got, want := entries(t, st), model(h.recs); !maps.Equal(got, want) {
		t.Fatalf("entries after a restart differ from the model:%s", diff(got, want))
	}
}

// TestPlanGateListed: with approve_plans, a run's plan gate is listed
// after its steps' place and goes once operators approve the plan; the
// entries equal the model's.
func TestPlanGateListed(t *testing.T) {
	kit := ledgertest.NewKit(t)
	st := ledgertest.OpenDir(t, t.TempDir())
	x := attach(t, st)
	h := newHistory(t, kit)
	h.decide() // the default policy
	text := "name: plans\napprove_plans: true\n"
	p, err := policy.Parse([]byte(text), "plans")
	if err != nil {
		t.Fatal(err)
	}
	admin := kit.Identity("root-admin", trust.KindOperator, event.RoleOperator, event.RoleAdmin)
	h.emit(admin, event.MustDraft(event.PolicyApplied, "", event.PolicyAppliedData{Base: 1, Name: p.Name, Hash: p.Hash(), Text: text, Source: event.PolicyFromApply}))
	run := h.submit("planned")
	h.propose(run, 1, linearPlan(2, true, ""))
	h.decide() // accept
	h.decide() // the plan gate
	appendChunks(t, st, h.msgs)
	h.msgs = nil
	gates := gatePage(t, x, api.GatesRequest{Run: run})
	if len(gates.Items) != 1 || gates.Items[0].Kind != event.GatePlan || gates.Items[0].Step != "" || gates.Items[0].Revision != 1 {
		t.Fatalf("gates %+v, want the plan gate", gates)
	}
	h.emit(kit.Operator, event.MustDraft(event.GateDecided, run, event.GateDecidedData{Subject: gates.Items[0].Subject, Action: event.GateAccept}))
	h.decide() // s0 assigned
	appendChunks(t, st, h.msgs)
	if left := gatePage(t, x, api.GatesRequest{}); len(left.Items) != 0 {
		t.Fatalf("gates after the approval: %+v", left)
	}
	if s, err := x.Run(run); err != nil || s.StepCounts[string(core.StepAssigned)] != 1 {
		t.Fatalf("Run(%s) = %+v, %v: want s0 assigned", run, s, err)
	}
	if got, want := entries(t, st), model(h.recs); !maps.Equal(got, want) {
		t.Fatalf("entries differ from the model:%s", diff(got, want))
	}
}
