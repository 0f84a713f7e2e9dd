package improve

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// testPolicy gates systemctl restart (reversible, high) and git push
// --force (irreversible), denies mkfs, and judges reboot critical.
const testPolicy = `name: test
default: allow
unresolved: confirm
levels: {low: allow, medium: allow, high: confirm, critical: confirm}
approvals:
  high: {approvers: 2}
rules:
  - name: restart
    match: {command: systemctl, subcommand: restart}
    level: high
    action: confirm
  - name: force-push
    match: {command: git, subcommand: push, any_flags: ["--force"]}
    level: high
    action: confirm
    reversible: false
  - name: reboot
    match: {command: [reboot]}
    level: critical
    action: confirm
  - name: mkfs
    match: {command: [mkfs]}
    level: high
    action: deny
`

func loadPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(testPolicy), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p.WithVersion(1)
}

// TestPatternShapeFailures: a command shape that failed three times in
// a family gives one notes proposal with the three failures as evidence;
// two failures, or a shape that succeeds more often, give none.
func TestPatternShapeFailures(t *testing.T) {
	p := plant(t)
	install := event.Step{ID: "install", Run: "apt-get install nginx"}
	var want []uint64
	for i := range 3 {
		run := fmt.Sprintf("r%d", i)
		p.run(run, "web", install)
		want = append(want, p.attempt(run, install, 1, failed(100)))
	}
	// Two failures of another shape, and a shape that fails three times
	// but succeeds four.
	other := event.Step{ID: "curl", Run: "curl -f http://x"}
	flaky := event.Step{ID: "make", Run: "make build"}
	for i := range 4 {
		run := fmt.Sprintf("s%d", i)
		p.run(run, "web", other, flaky)
		if i < 2 {
			p.attempt(run, other, 1, failed(22))
		}
		if i < 3 {
			p.attempt(run, flaky, 1, failed(2))
		}
		p.attempt(run, flaky, 2, ok(time.Second))
	}
	got := onlyPattern(Evaluate(DefaultRules(), p.telemetry(), Input{State: NewState()}), PatternShapeFailures)
	if len(got) != 1 {
		t.Fatalf("got %d shape proposals, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Subject != "apt-get install" || g.Family != "web" || !slices.Equal(g.Evidence, want) {
		t.Errorf("proposal about %q in %q with evidence %v, want apt-get install in web with %v", g.Subject, g.Family, g.Evidence, want)
	}
	if g.Change.Kind != event.ChangeNotes || g.Change.Note.Op != event.NoteAdd || !strings.Contains(g.Change.Note.Text, "failed 3 of 3") {
		t.Errorf("change %+v, want an added note that says it failed 3 of 3", g.Change.Note)
	}
	if g.Rollback.Note == nil || g.Rollback.Note.Op != event.NoteRetire || g.Rollback.Note.ID != g.Change.Note.ID {
		t.Errorf("rollback %+v, want the note retired", g.Rollback.Note)
	}
	if g.Validation.Method != "forbidden-checks" || g.Risk != "low" || g.Baseline.Errors != 3 || g.Baseline.Total != 3 {
		t.Errorf("validation %q, risk %q, baseline %+v", g.Validation.Method, g.Risk, g.Baseline)
	}
}

// TestPatternTimeouts: a step that timed out three times under the
// default timeout gives a step defaults proposal for its family,
// validated by replaying the recorded attempts; a step with its own
// timeout gives none.
func TestPatternTimeouts(t *testing.T) {
	p := plant(t)
	fetch := event.Step{ID: "fetch", Run: "./fetch.sh"}
	own := event.Step{ID: "own", Run: "./own.sh", Timeout: event.Duration(time.Second)}
	var want []uint64
	for i := range 3 {
		run := fmt.Sprintf("r%d", i)
		p.run(run, "nightly", fetch, own)
		want = append(want, p.attempt(run, fetch, 1, timedOut(time.Minute)))
		p.attempt(run, own, 1, timedOut(time.Second))
	}
	p.run("r3", "nightly", fetch)
	p.attempt("r3", fetch, 1, ok(50*time.Second))
	got := onlyPattern(Evaluate(DefaultRules(), p.telemetry(), Input{State: NewState()}), PatternTimeouts)
	if len(got) != 1 {
		t.Fatalf("got %d timeout proposals, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Subject != "nightly/fetch" || !slices.Equal(g.Evidence, want) {
		t.Errorf("subject %q evidence %v, want nightly/fetch %v", g.Subject, g.Evidence, want)
	}
	d := g.Change.Defaults
	if g.Change.Setting != event.SettingDefaultsTimeout || d == nil || d.Family != "nightly" || d.Timeout.Std() != 4*time.Minute {
		t.Errorf("change %+v %+v, want defaults.timeout 4m for nightly", g.Change, d)
	}
	if v := g.Validation; v.Method != "replay" || v.Pass != 1 || v.Unknown != 3 || v.Fail != 0 {
		t.Errorf("validation %+v, want a replay: 1 pass, 3 unknown", v)
	}
	if g.Rollback.Defaults == nil || g.Rollback.Defaults.Timeout != 0 {
		t.Errorf("rollback %+v, want no default timeout", g.Rollback.Defaults)
	}
}

// TestPatternGatesApproved: a command operators accepted at a gate
// three times, never refusing it, gives a policy proposal that adds
// exactly what gate approve --remember writes; a command refused once,
// one judged irreversible, critical or denied gives none.
func TestPatternGatesApproved(t *testing.T) {
	p := plant(t)
	pol := loadPolicy(t)
	gate := func(run, cmd, action string) {
		step := event.Step{ID: "s", Run: cmd}
		p.run(run, "ops", step)
		v := pol.Judge(cmd)
		p.emit(event.GateOpened, run, event.GateOpenedData{Decision: event.Decision{Epoch: 1}, Step: "s", Attempt: 1, Kind: event.GatePolicy,
			Subject: "x", Verdict: &event.Verdict{Action: v.Action.String(), Level: v.Level.String(), Rule: v.Rule, Reversible: v.Reversible}, Approvals: 1})
		p.emit(event.GateDecided, run, event.GateDecidedData{Step: "s", Subject: "x", Action: event.GateAction(action)})
	}
	for i := range 3 {
		gate(fmt.Sprintf("a%d", i), "systemctl restart nginx", "accept")
		gate(fmt.Sprintf("b%d", i), "systemctl restart mysql", "accept")
		gate(fmt.Sprintf("c%d", i), "git push --force origin main", "accept")
		gate(fmt.Sprintf("d%d", i), "reboot", "accept")
	}
	gate("b9", "systemctl restart mysql", "deny")
	got := onlyPattern(Evaluate(DefaultRules(), p.telemetry(), Input{State: NewState(), Policy: pol, PolicyText: testPolicy}), PatternGatesApproved)
	if len(got) != 1 {
		t.Fatalf("got %d gate proposals, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Subject != "systemctl restart nginx" || g.Risk != "high" || g.Approvers != 2 || len(g.Evidence) != 6 {
		t.Errorf("subject %q risk %q approvers %d evidence %v", g.Subject, g.Risk, g.Approvers, g.Evidence)
	}
	next, err := policy.Parse([]byte(g.Change.Policy.Text), "next")
	if err != nil {
		t.Fatal(err)
	}
	if v := next.Judge("systemctl restart nginx"); v.Action != policy.Allow {
		t.Errorf("the proposed policy judges the command %s, want allow", v.Action)
	}
	for _, cmd := range []string{"systemctl restart mysql", "systemctl restart nginx mysql", "mkfs /dev/sda"} {
		if before, after := pol.Judge(cmd), next.Judge(cmd); after.Action != before.Action {
			t.Errorf("the proposed policy changes %q from %s to %s", cmd, before.Action, after.Action)
		}
	}
	if v := g.Validation; v.Method != "rejudge" || v.NewAllows < 1 {
		t.Errorf("validation %+v, want a rejudge with the command newly allowed", v)
	}
}

// TestPatternReplans: replans that keep fixing the same failing command
// shape in one family give a notes proposal.
func TestPatternReplans(t *testing.T) {
	p := plant(t)
	step := event.Step{ID: "serve", Run: "systemctl start www", OnFailure: event.OnFailureReplan}
	var want []uint64
	for i := range 3 {
		run := fmt.Sprintf("r%d", i)
		p.run(run, "www", step)
		want = append(want, p.emit(event.PlanReplanRequested, run, event.PlanReplanRequestedData{Decision: event.Decision{Epoch: 1}, Revision: 1, Replans: 1,
			Plan: event.Plan{Family: "www", Steps: []event.Step{step}}, Failure: event.StepFailure{Step: "serve", Attempt: 1, Command: "systemctl start www", ExitCode: 5, Error: "unit not found"}}))
	}
	// Two replans of another shape: not enough.
	for i := range 2 {
		run := fmt.Sprintf("s%d", i)
		p.run(run, "www", step)
		p.emit(event.PlanReplanRequested, run, event.PlanReplanRequestedData{Decision: event.Decision{Epoch: 1}, Revision: 1,
			Failure: event.StepFailure{Step: "x", Command: "nginx -t"}})
	}
	got := onlyPattern(Evaluate(DefaultRules(), p.telemetry(), Input{State: NewState()}), PatternReplans)
	if len(got) != 1 {
		t.Fatalf("got %d replan proposals, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Subject != "systemctl start" || g.Family != "www" || !slices.Equal(g.Evidence, want) || !strings.Contains(g.Change.Note.Text, "unit not found") {
		t.Errorf("proposal %q %q %v %q", g.Subject, g.Family, g.Evidence, g.Change.Note.Text)
	}
}

// TestPatternFeedback: runs of one family rated down three times, more
// often than up, give a notes proposal; a family rated up as often gives
// none.
func TestPatternFeedback(t *testing.T) {
	p := plant(t)
	step := event.Step{ID: "a", Run: "true"}
	var want []uint64
	for i := range 3 {
		run := fmt.Sprintf("r%d", i)
		p.run(run, "report", step)
		p.attempt(run, step, 1, ok(time.Second))
		p.emit(event.RunFinished, run, map[string]any{"epoch": 1, "status": "succeeded"})
		want = append(want, p.emit(event.RunRated, run, map[string]string{"rating": "down", "reason": "too verbose"}))
	}
	for i := range 6 {
		run := fmt.Sprintf("s%d", i)
		p.run(run, "backup", step)
		rating := "up"
		if i%2 == 0 {
			rating = "down"
		}
		p.emit(event.RunRated, run, map[string]string{"rating": rating})
	}
	got := onlyPattern(Evaluate(DefaultRules(), p.telemetry(), Input{State: NewState()}), PatternFeedback)
	if len(got) != 1 {
		t.Fatalf("got %d feedback proposals, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Family != "report" || !slices.Equal(g.Evidence, want) || !strings.Contains(g.Change.Note.Text, "too verbose") {
		t.Errorf("proposal %q %v %q", g.Family, g.Evidence, g.Change.Note.Text)
	}
}

// TestEvaluateProposesOnce: a finding already proposed (whatever became
// of it) is not proposed again.
func TestEvaluateProposesOnce(t *testing.T) {
	p := plant(t)
	install := event.Step{ID: "install", Run: "apt-get install nginx"}
	for i := range 3 {
		run := fmt.Sprintf("r%d", i)
		p.run(run, "web", install)
		p.attempt(run, install, 1, failed(100))
	}
	first := Evaluate(DefaultRules(), p.telemetry(), Input{State: NewState()})
	if len(first) != 1 {
		t.Fatalf("got %d proposals, want 1", len(first))
	}
	p.emit(event.ProposalCreated, "", first[0])
	p.emit(event.ProposalRejected, "", event.ProposalDecidedData{Proposal: first[0].ID})
	if again := Evaluate(DefaultRules(), p.telemetry(), Input{State: p.state()}); len(again) != 0 {
		t.Errorf("proposed again: %+v", again)
	}
}
