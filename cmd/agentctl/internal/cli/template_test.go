package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// TestGoalSubmitFamilyTemplate: goal submit --family alone publishes a
// goal with the family and neither text nor a plan file (planned from the
// family's template); with nothing at all it is still a usage error.
func TestGoalSubmitFamilyTemplate(t *testing.T) {
	h := newHarness(t).withNode()
	if r := h.run("goal", "submit", "--family", "nightly"); r.code != 0 {
		t.Fatalf("goal submit --family = %+v", r)
	}
	evs := h.events()
	var d event.GoalSubmittedData
	if len(evs) != 1 || evs[0].Events[0].Decode(&d) != nil || d.Family != "nightly" || d.Text != "" || d.PlanFile != "" ||
		d.Goal != "the template of family nightly" {
		t.Fatalf("published %+v (%+v)", evs, d)
	}
	if r := h.run("goal", "submit"); r.code != ExitUsage || !strings.Contains(r.stderr, "--family NAME") {
		t.Errorf("goal submit with nothing = %+v, want a usage error naming --family", r)
	}
}

// TestProposalShowTemplate: proposal show of a template proposal names
// the template by hash, says a replay proves nothing, and prints the
// proposed plan.
func TestProposalShowTemplate(t *testing.T) {
	plan := "family: web\nsteps:\n  - id: check\n    run: nginx -t\n"
	change := event.Change{Kind: event.ChangeTemplate, Setting: event.SettingTemplate,
		Template: &event.TemplateChange{Family: "web", Plan: plan, Hash: tuning.TemplateHash(plan)}}
	rollback := event.Change{Kind: event.ChangeTemplate, Setting: event.SettingTemplate, Template: &event.TemplateChange{Family: "web"}}
	p := tuning.Proposal{ProposalCreatedData: event.ProposalCreatedData{ID: "p-1", Pattern: improve.PatternReplanTemplate, Family: "web",
		Change: change, Rollback: rollback, Validation: improve.TemplateValidation(change)}, Status: tuning.StatusPending}
	var b bytes.Buffer
	renderProposal(&b, &p)
	for _, want := range []string{"change     templates: the template of family web is the plan of sha256 " + change.Template.Hash,
		"rollback   templates: family web has no template", "validated  forbidden-checks: ", "proves nothing",
		"proposed template of family web:\n  family: web\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("proposal show lacks %q:\n%s", want, b.String())
		}
	}
	if got := changeCell(change); got != "template "+change.Template.Hash[:12]+" (web)" {
		t.Errorf("change cell %q", got)
	}
}
