package node_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/improve"
	"github.com/agentic-dev/agentic/roles/planner"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// TestTemplateProposalEndToEnd runs a template proposal on a real node:
// three model-planned runs of family web fail the same way and succeed
// once replanned → the leader proposes the replanned plan as the
// family's template → until approved, a goal that only names the family
// is rejected → approved, the next such goal is planned from the
// template (source template) and succeeds, and the model planning a
// text goal of the family is given it as its starting example (here it
// answers no plan, so that the run adds no attempt) → a forced
// regression of the family reverts it, and such a goal is rejected again.
func TestTemplateProposalEndToEnd(t *testing.T) {
	var shown atomic.Bool // a planner prompt carried the family's template
	srv := llmtest.Server(t, func(prompt string) string {
		switch {
		case strings.Contains(prompt, "template of this goal's plan family") && strings.Contains(prompt, "ls /"):
			// Seen; no plan, so that the run adds no attempt to what the
			// monitor compares.
			shown.Store(true)
			return "no plan"

		case strings.Contains(prompt, "You write the text of a proposal"):
			return "no draft" // the rules' text
		case strings.Contains(prompt, "and a step failed"):
			return `{"rationale": "ls has no such flag", "steps": [{"id": "listed", "run": "ls /"}]}`
		}
		return `{"steps": [{"id": "list", "run": "ls --no-such-flag /nonexistent", "on_failure": "replan"}]}`
	})
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	publish := func(typ event.Type, run string, v any) {
		t.Helper()
		if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(typ, run, v)); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(g event.GoalSubmittedData) api.Run {
		t.Helper()
		run := event.NewID()
		publish(event.GoalSubmitted, run, g)
		return n.WaitRun(t, run, 60*time.Second)
	}
	for i := range 3 {
		text := "list the root, take " + string(rune('1'+i))
		if r := submit(event.GoalSubmittedData{Goal: text, Text: text, Family: "web"}); r.Status != event.RunSucceeded {
			t.Fatalf("run %s: %s (%s), want succeeded once replanned", r.ID, r.Status, r.Reason)
		}
	}
	templateGoal := event.GoalSubmittedData{Goal: "the web template", Family: "web"}

	publish(event.ImproveEval, "", event.ImproveEvalData{Now: true})
	var p improve.Proposal
	poll.Eventually(t, 60*time.Second, "a template proposal", func() bool {
		var ps []improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsList, api.ProposalsRequest{}, &ps); err != nil {
			return false
		}
		for _, x := range ps {
			if x.Pattern == improve.PatternReplanTemplate {
				p = x
				return true
			}
		}
		return false
	})
	show := func() improve.Proposal {
		var got improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: p.ID}, &got); err != nil {
			t.Logf("proposals.show: %v", err)
		}
		return got
	}
	p = show()
	if p.Status != improve.StatusPending || p.Family != "web" || p.Change.Template == nil || !strings.Contains(p.Change.Template.Plan, "ls /") ||
		!strings.Contains(p.Validation.Summary, "proves nothing") {
		t.Fatalf("proposal %+v", p)
	}
	// Unapproved, it changes nothing: the family has no template.
	if r := submit(templateGoal); r.Status != event.RunFailed || !strings.Contains(r.Reason, "no template") {
		t.Fatalf("run %s before approval: %s (%s), want failed for want of a template", r.ID, r.Status, r.Reason)
	}

	publish(event.ProposalApproved, "", event.ProposalDecidedData{Proposal: p.ID, Reason: "the plan that works"})
	poll.Eventually(t, 30*time.Second, "the proposal applied", func() bool { return show().Status == improve.StatusApplied })
	var s improve.State
	if err := n.API.Call(ctx, api.MethodImproveSettings, struct{}{}, &s); err != nil {
		t.Fatal(err)
	}
	if tpl := s.Templates["web"]; tpl.Hash != p.Change.Template.Hash || tpl.Proposal != p.ID {
		t.Fatalf("settings' template %+v, want the proposal's", tpl)
	}
	r := submit(templateGoal)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s from the template: %s (%s)", r.ID, r.Status, r.Reason)
	}
	props := runEvents[event.PlanProposedData](t, n, r.ID, event.PlanProposed)
	if len(props) == 0 || props[0].Source != planner.SourceTemplate || props[0].Plan.Family != "web" ||
		!slices.ContainsFunc(props[0].Plan.Steps, func(s event.Step) bool { return s.Run == "ls /" }) {
		t.Fatalf("proposals %+v, want the template's plan", props)
	}
	if shown.Load() {
		t.Fatal("a prompt carried the template before it was approved")
	}
	if r := submit(event.GoalSubmittedData{Goal: "list it again", Text: "list it again", Family: "web"}); r.Status != event.RunFailed || !shown.Load() {
		t.Fatalf("run %s: %s (%s); template in the prompt: %v", r.ID, r.Status, r.Reason, shown.Load())
	}

	// The forced regression: the family's runs fail; the monitor reverts.
	for range 4 {
		if r := n.WaitRun(t, n.Submit(t, "p.yaml", "family: web\nsteps:\n  - id: broken\n    run: \"false\"\n"), 60*time.Second); r.Status != event.RunFailed {
			t.Fatalf("run %s: %s", r.ID, r.Status)
		}
	}
	poll.Eventually(t, 30*time.Second, "the proposal reverted", func() bool { return show().Status == improve.StatusReverted })
	t.Logf("reverted: %s", show().Outcome.Reason)
	poll.Eventually(t, 30*time.Second, "the template gone", func() bool {
		var s improve.State
		if err := n.API.Call(ctx, api.MethodImproveSettings, struct{}{}, &s); err != nil {
			return false
		}
		_, ok := s.Templates["web"]
		return !ok
	})
	if r := submit(templateGoal); r.Status != event.RunFailed || !strings.Contains(r.Reason, "no template") {
		t.Fatalf("run %s after the revert: %s (%s), want failed for want of a template", r.ID, r.Status, r.Reason)
	}
}
