package improve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
)

// webTemplate is a template of family web, as a plan file.
const webTemplate = "goal: serve the site\nfamily: web\nsteps:\n  - id: check\n    run: nginx -t\n  - id: reload\n    run: nginx -s reload\n    depends_on: [check]\n"

func sha(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// templateChange is the change that makes text family's template ("":
// none).
func templateChange(family, text string) event.Change {
	tc := &event.TemplateChange{Family: family, Plan: text}
	if text != "" {
		tc.Hash = sha(text)
	}
	return event.Change{Kind: event.ChangeTemplate, Setting: event.SettingTemplate, Template: tc}
}

// TestTemplateForbidden: a template change is refused unless its plan
// decodes as a plan of its family with bounded steps, hashes as it says
// and carries no secret.
func TestTemplateForbidden(t *testing.T) {
	if err := Forbidden(templateChange("web", webTemplate)); err != nil {
		t.Fatalf("a valid template refused: %v", err)
	}
	if err := Forbidden(templateChange("web", "")); err != nil {
		t.Fatalf("a removal refused: %v", err)
	}
	wrongHash := templateChange("web", webTemplate)
	wrongHash.Template.Hash = sha("other")
	bad := map[string]event.Change{
		"not a plan":    templateChange("web", "this is not a plan"),
		"no steps":      templateChange("web", "goal: nothing\nfamily: web\nsteps: []\n"),
		"other family":  templateChange("web", strings.Replace(webTemplate, "family: web", "family: db", 1)),
		"no family":     templateChange("web", strings.Replace(webTemplate, "family: web\n", "", 1)),
		"wrong hash":    wrongHash,
		"many retries":  templateChange("web", "family: web\nsteps:\n  - id: a\n    run: \"true\"\n    retries: 9\n"),
		"long timeout":  templateChange("web", "family: web\nsteps:\n  - id: a\n    run: \"true\"\n    timeout: 48h\n"),
		"secret":        templateChange("web", "family: web\nsteps:\n  - id: a\n    run: mysql -u root -pS3cretPW app\n"),
		"bad family":    templateChange("Web Site", webTemplate),
		"huge":          templateChange("web", webTemplate+"# "+strings.Repeat("x", 70<<10)+"\n"),
		"hash, no plan": {Kind: event.ChangeTemplate, Setting: event.SettingTemplate, Template: &event.TemplateChange{Family: "web", Hash: sha("x")}},
	}
	for name, c := range bad {
		err := Forbidden(c)
		if !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: got %v, want a forbidden change", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestTemplateProposalApplied: an approved template proposal is applied
// as tuning.changed (the template then in force for the family) and
// proposal.applied whose validation says a replay proves nothing; a
// regression of the family reverts it and the family has no template
// again.
func TestTemplateProposalApplied(t *testing.T) {
	p := plant(t)
	step := event.Step{ID: "check", Run: "nginx -t"}
	for _, run := range []string{"a", "b", "c", "d"} {
		p.run(run, "web", step)
		p.attempt(run, step, 1, ok(time.Second))
	}
	prop := event.ProposalCreatedData{ID: "p-tpl", Pattern: "replan_template", Subject: "nginx", Family: "web", Risk: "medium", Approvers: 1,
		Change: templateChange("web", webTemplate), Rollback: templateChange("web", "")}
	p.emit(event.ProposalCreated, "", prop)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-tpl"})
	c := &capture{p: p}
	mon := Monitor{Threshold: 0.25, MinBaseline: 3, MinAfter: 3, MaxWatch: time.Hour}
	l := New(Config{Node: "n1", Emit: c, Now: func() time.Time { return p.now }, Monitor: mon})
	p.feed(l)
	ctx := context.Background()
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); !slices.Equal(got, []event.Type{event.TuningChanged, event.ProposalApplied}) {
		t.Fatalf("emitted %v, want tuning.changed and proposal.applied", got)
	}
	p.feed(l)
	got, _ := l.Proposal("p-tpl")
	if got.Status != StatusApplied || got.ApplyCheck == nil || !strings.Contains(got.ApplyCheck.Summary, "proves nothing") {
		t.Fatalf("status %s, check %+v; want applied, saying a replay proves nothing", got.Status, got.ApplyCheck)
	}
	checkTemplateInForce(t, l, "web", webTemplate)
	for _, run := range []string{"e", "f", "g"} {
		p.run(run, "web", step)
		p.attempt(run, step, 1, failed(1))
	}
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	if got, _ := l.Proposal("p-tpl"); got.Status != StatusReverted {
		t.Fatalf("status %s after the regression, want reverted", got.Status)
	}
	checkTemplateInForce(t, l, "web", "")
}

// checkTemplateInForce fails t unless family's template in force is text
// ("": none), in the loop and in its settings.
func checkTemplateInForce(t *testing.T, l *Loop, family, text string) {
	t.Helper()
	tpl, ok := l.Template(family)
	if ok != (text != "") || tpl.Plan != text {
		t.Fatalf("template of %s: %q (in force %v), want %q", family, tpl.Plan, ok, text)
	}
	s := l.Settings()
	if got := s.Templates[family]; got.Plan != text || (text != "" && got.Hash != sha(text)) {
		t.Fatalf("settings' template of %s: %+v", family, got)
	}
}

// TestPatternReplanTemplate: three runs of a family replanned after the
// same failing command, the last of which succeeded with its replanned
// plan, give a template proposal of that plan (the decoder reads it back
// as the plan that worked), with the replans, the plan and the run's end
// as evidence and no template as rollback; runs whose replanned plan
// failed, and a template already in force, give none.
func TestPatternReplanTemplate(t *testing.T) {
	p := plant(t)
	bad := event.Step{ID: "serve", Run: "systemctl start www", OnFailure: event.OnFailureReplan}
	good := event.Step{ID: "serve2", Kind: event.KindShell, Run: "systemctl start www.service"}
	var want []uint64
	for i, status := range []event.RunStatus{event.RunSucceeded, event.RunFailed, event.RunSucceeded} {
		run := string(rune('a' + i))
		p.run(run, "www", bad)
		want = append(want, p.emit(event.PlanReplanRequested, run, event.PlanReplanRequestedData{Decision: event.Decision{Epoch: 1}, Revision: 1, Replans: 1,
			Plan: event.Plan{Family: "www", Steps: []event.Step{bad}}, Failure: event.StepFailure{Step: "serve", Attempt: 1, Command: "systemctl start www", ExitCode: 5}}))
		goal := "serve www, try " + run
		prop := p.emit(event.PlanProposed, run, event.PlanProposedData{Revision: 2, Replaces: 1, Source: "llm",
			Plan: event.Plan{Goal: goal, Family: "www", Steps: []event.Step{good}}})
		fin := p.emit(event.RunFinished, run, event.RunFinishedData{Decision: event.Decision{Epoch: 1}, Status: status})
		if i == 2 {
			want = append(want, prop, fin)
		}
	}
	tel := p.telemetry()
	got := onlyPattern(Evaluate(DefaultRules(), tel, Input{State: NewState()}), PatternReplanTemplate)
	if len(got) != 1 {
		t.Fatalf("got %d template proposals, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Pattern != PatternReplanTemplate || g.Family != "www" || g.Subject != "systemctl start" || !slices.Equal(g.Evidence, want) {
		t.Fatalf("proposal %s %q %q evidence %v, want %v", g.Pattern, g.Family, g.Subject, g.Evidence, want)
	}
	if err := Forbidden(g.Change); err != nil {
		t.Fatal(err)
	}
	pl, err := tuning.ParseTemplate("www", g.Change.Template.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Goal != "serve www, try c" || len(pl.Steps) != 1 || pl.Steps[0].Run != good.Run {
		t.Fatalf("template plan %+v, want run c's replanned plan", pl)
	}
	if rb := g.Rollback.Template; rb == nil || rb.Plan != "" || rb.Family != "www" {
		t.Fatalf("rollback %+v, want no template for www", g.Rollback)
	}
	if !strings.Contains(g.Validation.Summary, "proves nothing") {
		t.Errorf("validation %+v, want it to say a replay proves nothing", g.Validation)
	}
	// Once that template is in force, the same plan is not proposed again.
	st := NewState()
	st.Templates = map[string]Template{"www": {Family: "www", Plan: g.Change.Template.Plan, Hash: g.Change.Template.Hash}}
	if again := EvaluateTemplates(DefaultRules(), tel, Input{State: st}); len(again) != 0 {
		t.Fatalf("proposed again with the template in force: %+v", again)
	}
	// Only replanned runs that failed: no template.
	q := plant(t)
	for i := range 3 {
		run := string(rune('a' + i))
		q.run(run, "www", bad)
		q.emit(event.PlanReplanRequested, run, event.PlanReplanRequestedData{Decision: event.Decision{Epoch: 1}, Revision: 1,
			Failure: event.StepFailure{Step: "serve", Command: "systemctl start www"}})
		q.emit(event.PlanProposed, run, event.PlanProposedData{Revision: 2, Source: "llm", Plan: event.Plan{Family: "www", Steps: []event.Step{good}}})
		q.emit(event.RunFinished, run, event.RunFinishedData{Decision: event.Decision{Epoch: 1}, Status: event.RunFailed})
	}
	if none := EvaluateTemplates(DefaultRules(), q.telemetry(), Input{State: NewState()}); len(none) != 0 {
		t.Fatalf("a template from runs that failed: %+v", none)
	}
}

// TestTemplateRefusedAtApplyWhenReplaced: a template proposal whose
// rollback no longer restores the family's template in force (another
// proposal replaced it since) is refused at apply, and the template in
// force stays.
func TestTemplateRefusedAtApplyWhenReplaced(t *testing.T) {
	p := plant(t)
	other := strings.Replace(webTemplate, "nginx -t", "nginx -T", 1)
	p.emit(event.ProposalCreated, "", event.ProposalCreatedData{ID: "p-first", Pattern: "replan_template", Family: "web", Risk: "medium", Approvers: 1,
		Change: templateChange("web", other), Rollback: templateChange("web", "")})
	p.emit(event.ProposalCreated, "", event.ProposalCreatedData{ID: "p-second", Pattern: "replan_template", Family: "web", Risk: "medium", Approvers: 1,
		Change: templateChange("web", webTemplate), Rollback: templateChange("web", "")})
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-first"})
	c := &capture{p: p}
	l := New(Config{Node: "n1", Emit: c, Now: func() time.Time { return p.now }})
	p.feed(l)
	ctx := context.Background()
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	checkTemplateInForce(t, l, "web", other)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-second"})
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	got, _ := l.Proposal("p-second")
	if got.Status != StatusReverted || got.Outcome == nil || !strings.Contains(got.Outcome.Reason, "changed since the proposal was made") {
		t.Fatalf("status %s outcome %+v, want reverted: refused at apply", got.Status, got.Outcome)
	}
	checkTemplateInForce(t, l, "web", other)
}
