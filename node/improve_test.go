package node_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/improve"
)

const (
	slowFetch = "goal: fetch\nfamily: nightly\nsteps:\n  - id: fetch\n    run: sleep 2\n"
	quickStep = "goal: quick\nfamily: nightly\nsteps:\n  - id: quick\n    run: \"true\"\n"
	brokenRun = "goal: broken\nfamily: nightly\nsteps:\n  - id: broken\n    run: \"false\"\n"
)

// TestImproveLoopEndToEnd runs the loop on a real node: three runs of a
// family time out the same way under the executor's default timeout → the
// leader proposes a default timeout for the family, with the three
// failures as evidence → an operator approves → the next run of the step
// gets the new default and succeeds → a forced regression (runs of the
// family that fail) reverts the change on its own, and the proposal
// shows every state. Timeouts are not what the adaptive notes count, so
// the loop is what makes this pass.
func TestImproveLoopEndToEnd(t *testing.T) {
	cfg := nodetest.Config(t.TempDir())
	cfg.Executor.DefaultTimeout = time.Second
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	publish := func(typ event.Type, v any) {
		t.Helper()
		if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(typ, "", v)); err != nil {
			t.Fatal(err)
		}
	}
	runAll := func(plan string, count int, want event.RunStatus) {
		t.Helper()
		for range count {
			if r := n.WaitRun(t, n.Submit(t, "p.yaml", plan), 60*time.Second); r.Status != want {
				t.Fatalf("run %s: %s (%s), want %s", r.ID, r.Status, r.Reason, want)
			}
		}
	}
	runAll(quickStep, 3, event.RunSucceeded)
	runAll(slowFetch, 3, event.RunFailed)

	publish(event.ImproveEval, event.ImproveEvalData{Now: true})
	var p improve.Proposal
	poll.Eventually(t, 30*time.Second, "a timeouts proposal", func() bool {
		var ps []improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsList, api.ProposalsRequest{}, &ps); err != nil {
			return false
		}
		for _, x := range ps {
			if x.Pattern == improve.PatternTimeouts {
				p = x
				return true
			}
		}
		return false
	})
	if p.Status != improve.StatusPending || len(p.Evidence) != 3 || p.Family != "nightly" {
		t.Fatalf("proposal %s: status %s, evidence %v, family %q; want pending, 3 events, nightly", p.ID, p.Status, p.Evidence, p.Family)
	}
	if d := p.Change.Defaults; d == nil || d.Timeout.Std() < 3*time.Second {
		t.Fatalf("change %+v, want a default timeout of several seconds", p.Change)
	}
	// Unapproved, it changes nothing: the step still times out.
	runAll(slowFetch, 1, event.RunFailed)

	publish(event.ProposalApproved, event.ProposalDecidedData{Proposal: p.ID, Reason: "the mirror is slow"})
	show := func() improve.Proposal {
		var got improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: p.ID}, &got); err != nil {
			t.Logf("proposals.show: %v", err)
		}
		return got
	}
	poll.Eventually(t, 30*time.Second, "the proposal applied", func() bool { return show().Status == improve.StatusApplied })
	var s improve.State
	if err := n.API.Call(ctx, api.MethodImproveSettings, struct{}{}, &s); err != nil {
		t.Fatal(err)
	}
	if d := s.Defaults["nightly"]; d.Timeout != p.Change.Defaults.Timeout {
		t.Fatalf("settings %+v, want nightly's default timeout %s", s.Defaults, p.Change.Defaults.Timeout)
	}
	// In force for the next run: the step that timed out succeeds.
	runAll(slowFetch, 1, event.RunSucceeded)

	// The forced regression: the family's runs fail; the monitor reverts.
	runAll(brokenRun, 4, event.RunFailed)
	poll.Eventually(t, 30*time.Second, "the proposal reverted", func() bool { return show().Status == improve.StatusReverted })
	got := show()
	var states []improve.Status
	for _, h := range got.History {
		states = append(states, h.Status)
	}
	if want := []improve.Status{improve.StatusPending, improve.StatusApproved, improve.StatusApplied, improve.StatusReverted}; !slices.Equal(states, want) {
		t.Errorf("history %v, want %v", states, want)
	}
	if got.Outcome == nil || got.Outcome.After.Errors != 4 || got.Outcome.After.Total != 5 {
		t.Errorf("outcome %+v, want 4 errors of 5 after", got.Outcome)
	}
	t.Logf("reverted: %s", got.Outcome.Reason)
	poll.Eventually(t, 30*time.Second, "the default gone", func() bool {
		var s improve.State
		if err := n.API.Call(ctx, api.MethodImproveSettings, struct{}{}, &s); err != nil {
			return false
		}
		_, ok := s.Defaults["nightly"]
		return !ok
	})
	runAll(slowFetch, 1, event.RunFailed)
}

// TestPromptCarriesApprovedNotes: a note a proposal adds reaches a
// model's prompt for a goal of its family only once approved, before the
// automatic notes, which are marked as such.
func TestPromptCarriesApprovedNotes(t *testing.T) {
	prompts := make(chan string, 64)
	srv := modelServer(t, `{"steps": [{"id": "hello", "run": "echo hello"}]}`, prompts)
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	submitFamily := func(text string) string {
		t.Helper()
		d := event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: text, Text: text, Family: "web"})
		if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
			t.Fatal(err)
		}
		return d.Run
	}
	for range 3 {
		if r := n.WaitRun(t, n.Submit(t, "fails.yaml", "family: web\nsteps:\n  - id: list\n    run: ls --no-such-flag /nonexistent\n"), 30*time.Second); r.Status != event.RunFailed {
			t.Fatalf("run %s: %s", r.ID, r.Status)
		}
	}
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.ImproveEval, "", event.ImproveEvalData{Now: true})); err != nil {
		t.Fatal(err)
	}
	var p improve.Proposal
	poll.Eventually(t, 30*time.Second, "a shape_failures proposal", func() bool {
		var ps []improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsList, api.ProposalsRequest{}, &ps); err != nil || len(ps) == 0 {
			return false
		}
		p = ps[0]
		return p.Pattern == improve.PatternShapeFailures
	})
	note := p.Change.Note.Text
	// The same model drafts the leader's proposals (draft.go): the
	// prompts that matter here are the planner's.
	planPrompt := func() string {
		t.Helper()
		for {
			select {
			case got := <-prompts:
				if !strings.Contains(got, "You write the text of a proposal") {
					return got
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no planner prompt")
			}
		}
	}
	n.WaitRun(t, submitFamily("before approval"), 30*time.Second)
	if got := planPrompt(); strings.Contains(got, note) || !strings.Contains(got, "(automatic, from the command statistics)") {
		t.Fatalf("prompt before approval (the note must be absent, the automatic one marked):\n%s", got)
	}
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.ProposalApproved, "", event.ProposalDecidedData{Proposal: p.ID})); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the proposal applied", func() bool {
		var got improve.Proposal
		return n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: p.ID}, &got) == nil && got.Status == improve.StatusApplied
	})
	n.WaitRun(t, submitFamily("after approval"), 30*time.Second)
	got := planPrompt()
	approved, auto := strings.Index(got, note), strings.Index(got, "(automatic, from the command statistics)")
	if approved < 0 || auto < approved {
		t.Fatalf("prompt after approval (the approved note first, then the automatic one):\n%s", got)
	}
}

// TestProposalDraftedByPlannerModel: on a node with a planner model, the
// leader's loop has the model draft a new proposal's text; the
// proposal's kind, evidence and change stay the rule's when the model
// drafts none, and proposals.show says who drafted what.
func TestProposalDraftedByPlannerModel(t *testing.T) {
	srv := modelServer(t, `{"root_cause": "the nightly mirror answers slowly", "expected_effect": "fetch finishes", "risk_note": "a hung fetch waits longer", "change": null}`)
	cfg := nodetest.Config(t.TempDir())
	cfg.Executor.DefaultTimeout = time.Second
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	for _, plan := range []struct {
		text string
		want event.RunStatus
	}{{quickStep, event.RunSucceeded}, {quickStep, event.RunSucceeded}, {quickStep, event.RunSucceeded},
		{slowFetch, event.RunFailed}, {slowFetch, event.RunFailed}, {slowFetch, event.RunFailed}} {
		if r := n.WaitRun(t, n.Submit(t, "p.yaml", plan.text), 60*time.Second); r.Status != plan.want {
			t.Fatalf("run %s: %s (%s), want %s", r.ID, r.Status, r.Reason, plan.want)
		}
	}
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.ImproveEval, "", event.ImproveEvalData{Now: true})); err != nil {
		t.Fatal(err)
	}
	var p improve.Proposal
	poll.Eventually(t, 30*time.Second, "a timeouts proposal", func() bool {
		var ps []improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsList, api.ProposalsRequest{}, &ps); err != nil || len(ps) == 0 {
			return false
		}
		return n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: ps[0].ID}, &p) == nil
	})
	if p.Pattern != improve.PatternTimeouts || len(p.Evidence) != 3 || p.Change.Defaults == nil {
		t.Fatalf("proposal %+v: want the timeouts rule's, with 3 events of evidence", p)
	}
	if p.DraftedBy != event.DraftedByModel || p.ChangeBy != event.DraftedByRules || p.RootCause != "the nightly mirror answers slowly" || p.RiskNote == "" {
		t.Errorf("drafted by %q change by %q root cause %q risk note %q: want the model's text and the rule's change",
			p.DraftedBy, p.ChangeBy, p.RootCause, p.RiskNote)
	}
}
