package planner

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// TestGoalPlannedFromFamilyTemplate: a goal that names a family and has
// neither a plan file nor text is planned at once, unclaimed, from the
// family's template in force when it is planned (source "template"); a
// family with no template rejects it saying what to do, and a template
// changed afterwards plans the next goal.
func TestGoalPlannedFromFamilyTemplate(t *testing.T) {
	var mu sync.Mutex
	templates := map[string]string{"web": "goal: serve the site\nfamily: web\nsteps:\n  - id: check\n    run: nginx -t\n"}
	lookup := func(family string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		text, ok := templates[family]
		return text, ok
	}
	ob := &outbox{}
	p := start(t, ob, Config{Templates: lookup})
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r1", event.GoalSubmittedData{Goal: "the web template", Family: "web"}))
	fold(p, l.event(event.GoalSubmitted, "r2", event.GoalSubmittedData{Goal: "the db template", Family: "db"}))
	p.Settled(true)
	d := proposed(t, one(t, ob, "r1"))
	if d.Source != SourceTemplate || d.Revision != 1 || d.Plan.Goal != "serve the site" || d.Plan.Family != "web" ||
		len(d.Plan.Steps) != 1 || d.Plan.Steps[0].Run != "nginx -t" {
		t.Fatalf("proposal %+v, want the web template's plan", d)
	}
	if msg := rejected(t, one(t, ob, "r2")); !strings.Contains(msg, ErrNoTemplate.Error()) || !strings.Contains(msg, `family "db"`) ||
		!strings.Contains(msg, "agentctl goal submit -f") {
		t.Fatalf("rejection %q", msg)
	}
	mu.Lock()
	templates["web"] = "family: web\nsteps:\n  - id: reload\n    run: nginx -s reload\n"
	mu.Unlock()
	fold(p, l.event(event.GoalSubmitted, "r3", event.GoalSubmittedData{Goal: "again", Family: "web"}))
	p.Settled(true)
	d = proposed(t, one(t, ob, "r3"))
	if d.Plan.Goal != "again" || d.Plan.Steps[0].ID != "reload" {
		t.Fatalf("proposal %+v, want the new template, with the submitted goal", d)
	}
}

// TestTemplateRunIsNotReplanned: a replan request for a run planned from
// its family's template is rejected at once, saying to change the
// template through a proposal (not to fix a plan file), without a claim.
func TestTemplateRunIsNotReplanned(t *testing.T) {
	b := &bus{}
	p := b.planner(t, "p1", Config{ClaimTimeout: time.Hour})
	p.Settled(true)
	b.add(event.PlanReplanRequested, "r", request(SourceTemplate, event.GoalSubmittedData{Goal: "g", Family: "web"}))
	poll.Eventually(t, 10*time.Second, "a rejection", func() bool { return len(b.of(event.PlanRejected)) == 1 })
	var d event.PlanRejectedData
	if err := b.of(event.PlanRejected)[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Error, "family web's template") || !strings.Contains(d.Error, "proposal") || strings.Contains(d.Error, "fix the plan file") ||
		len(b.of(event.PlanClaimed)) != 0 {
		t.Fatalf("rejection %q, %d claims", d.Error, len(b.of(event.PlanClaimed)))
	}
}
