package improve

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

func timeoutProposal(id string) event.ProposalCreatedData {
	return event.ProposalCreatedData{ID: id, Pattern: PatternTimeouts, Subject: "f/s", Family: "f", Risk: "medium", Approvers: 2,
		Change:   event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "f", Timeout: event.Duration(time.Minute)}},
		Rollback: event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "f"}}}
}

// TestUnapprovedChangesNothing: a tuning.changed for a proposal that is
// pending (one approval of two), rejected, refused or unknown, or that
// carries another change than the proposal's, changes no setting; once
// approved by two operators it does.
func TestUnapprovedChangesNothing(t *testing.T) {
	p := plant(t)
	prop := timeoutProposal("p-1")
	p.emit(event.ProposalCreated, "", prop)
	apply := event.TuningChangedData{Proposal: "p-1", Change: prop.Change}
	p.emit(event.TuningChanged, "", apply)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"})
	p.emit(event.TuningChanged, "", apply)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"}) // the same operator again
	p.emit(event.TuningChanged, "", apply)
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-9", Change: prop.Change})
	rejected := timeoutProposal("p-2")
	rejected.Change.Defaults.Timeout = event.Duration(time.Hour)
	p.emit(event.ProposalCreated, "", rejected)
	p.add(p.operator("bob"), event.ProposalRejected, "", event.ProposalDecidedData{Proposal: "p-2"})
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-2", Change: rejected.Change})
	s := p.state()
	if len(s.Defaults) != 0 {
		t.Fatalf("defaults %+v changed without approval", s.Defaults)
	}
	if st := s.Proposals["p-1"].Status; st != StatusPending {
		t.Fatalf("p-1 is %s after one operator's approval of two, want pending", st)
	}
	// Another change than the proposal's, under an approved proposal.
	p.add(p.operator("bob"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"})
	other := prop.Change
	other.Defaults = &event.StepDefaults{Family: "f", Timeout: event.Duration(2 * time.Hour)}
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-1", Change: other})
	if s := p.state(); len(s.Defaults) != 0 || s.Proposals["p-1"].Status != StatusApproved {
		t.Fatalf("defaults %+v, status %s: want none, approved", s.Defaults, s.Proposals["p-1"].Status)
	}
	p.emit(event.TuningChanged, "", apply)
	s = p.state()
	if d := s.Defaults["f"]; d.Timeout.Std() != time.Minute {
		t.Fatalf("defaults %+v after approval, want f: 1m", s.Defaults)
	}
	step := event.Step{ID: "s"}
	if !s.StepDefaults("f", &step) || step.Timeout.Std() != time.Minute {
		t.Errorf("a step of f without timeout gets %s, want 1m", step.Timeout)
	}
	own := event.Step{ID: "s", Timeout: event.Duration(time.Second)}
	if s.StepDefaults("f", &own) || own.Timeout.Std() != time.Second {
		t.Errorf("a step with its own timeout got %s", own.Timeout)
	}
}

// TestForbiddenRefusedAtCreation: a proposal.created whose change is
// forbidden is folded as refused; approvals do not move it, its change
// never applies, and the leader's loop never applies it.
func TestForbiddenRefusedAtCreation(t *testing.T) {
	p := plant(t)
	bad := timeoutProposal("p-bad")
	bad.Change.Setting = "monitor.threshold"
	p.emit(event.ProposalCreated, "", bad)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-bad"})
	p.add(p.operator("bob"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-bad"})
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-bad", Change: bad.Change})
	s := p.state()
	if st := s.Proposals["p-bad"].Status; st != StatusRefused {
		t.Errorf("status %s, want refused", st)
	}
	if len(s.Defaults) != 0 {
		t.Errorf("defaults %+v", s.Defaults)
	}
	c := &capture{p: p}
	l := New(Config{Node: "n1", Emit: c, Ledger: p.store, Now: func() time.Time { return p.now }})
	p.feed(l)
	if err := l.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, typ := range c.types() {
		if typ != event.ProposalCreated {
			t.Errorf("the loop emitted %s for a refused proposal", typ)
		}
	}
}

// TestForbiddenRefusedAtApply: a policy proposal approved against
// version 1 is refused at apply once an administrator applied version 2:
// the loop ends it reverted ("refused at apply") and records no policy.
func TestForbiddenRefusedAtApply(t *testing.T) {
	p := plant(t)
	pol := loadPolicy(t)
	p.emit(event.PolicyApplied, "", event.PolicyAppliedData{Base: 0, Name: "test", Hash: pol.Hash(), Text: testPolicy, Source: event.PolicyFromApply})
	text, err := policy.Remember([]byte(testPolicy), "systemctl restart nginx", "", "proposal", "approved")
	if err != nil {
		t.Fatal(err)
	}
	prop := event.ProposalCreatedData{ID: "p-pol", Pattern: PatternGatesApproved, Subject: "systemctl restart nginx", Risk: "high", Approvers: 1,
		Change: policyChange(t, 1, string(text), "systemctl restart nginx"), Rollback: policyChange(t, 2, testPolicy, "")}
	p.emit(event.ProposalCreated, "", prop)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-pol"})
	v2 := testPolicy + "  - name: extra\n    pattern: \"curl\"\n    action: confirm\n"
	p2, err := policy.Parse([]byte(v2), "v2")
	if err != nil {
		t.Fatal(err)
	}
	p.emit(event.PolicyApplied, "", event.PolicyAppliedData{Base: 1, Name: "test", Hash: p2.Hash(), Text: v2, Source: event.PolicyFromApply})
	c := &capture{p: p}
	l := New(Config{Node: "n1", Emit: c, Ledger: p.store, Now: func() time.Time { return p.now }})
	p.feed(l)
	if err := l.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); !slices.Equal(got, []event.Type{event.ProposalReverted}) {
		t.Fatalf("emitted %v, want proposal.reverted alone", got)
	}
	p.feed(l)
	got, _ := l.Proposal("p-pol")
	if got.Status != StatusReverted || got.Outcome == nil {
		t.Fatalf("status %s, want reverted", got.Status)
	}
	t.Logf("reverted: %s", got.Outcome.Reason)
}

// TestLoopLifecycle: three timeouts → proposal (evidence) → two
// approvals → the default in force → a regression → automatic revert,
// the default gone, every state in the history; and a second proposal
// that holds up → implemented.
func TestLoopLifecycle(t *testing.T) {
	p := plant(t)
	fetch := event.Step{ID: "fetch", Run: "./fetch.sh"}
	for i := range 3 {
		run := fmt.Sprintf("ok%d", i)
		p.run(run, "nightly", fetch)
		p.attempt(run, fetch, 1, ok(time.Second))
	}
	for i := range 3 {
		run := fmt.Sprintf("slow%d", i)
		p.run(run, "nightly", fetch)
		p.attempt(run, fetch, 1, timedOut(2*time.Second))
	}
	c := &capture{p: p}
	digest := &Digest{Now: func() time.Time { return p.now }}
	mon := Monitor{Threshold: 0.25, MinBaseline: 3, MinAfter: 3, MaxWatch: time.Hour}
	l := New(Config{Node: "n1", Emit: c, Ledger: p.store, Now: func() time.Time { return p.now }, Monitor: mon, Digest: digest})
	p.feed(l)
	ctx := context.Background()
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if ps := l.Proposals(); len(ps) != 0 {
		t.Fatalf("proposals %+v before the ledger gave the emitted one back", ps)
	}
	p.feed(l)
	ps := l.Proposals()
	if len(ps) != 1 || ps[0].Pattern != PatternTimeouts || len(ps[0].Evidence) != 3 {
		t.Fatalf("proposals %+v, want one timeouts proposal with 3 pieces of evidence", ps)
	}
	id := ps[0].ID
	// Nothing happens before approval.
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	if s := l.Settings(); len(s.Defaults) != 0 {
		t.Fatalf("defaults %+v before approval", s.Defaults)
	}
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: id, Reason: "slow mirror"})
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	if got, _ := l.Proposal(id); got.Status != StatusApplied {
		t.Fatalf("status %s after approval, want applied", got.Status)
	}
	if d := l.Settings().Defaults["nightly"]; d.Timeout.Std() != 8*time.Second {
		t.Fatalf("default %+v, want nightly 8s in force", d)
	}
	// The regression: three failures of the family after apply.
	for i := range 3 {
		run := fmt.Sprintf("bad%d", i)
		p.run(run, "nightly", fetch)
		p.attempt(run, fetch, 1, failed(1))
	}
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	got, _ := l.Proposal(id)
	if got.Status != StatusReverted || got.Outcome == nil || got.Outcome.After.Errors != 3 {
		t.Fatalf("status %s outcome %+v, want reverted with 3 errors after", got.Status, got.Outcome)
	}
	if d, ok := l.Settings().Defaults["nightly"]; ok {
		t.Fatalf("default %+v still in force after the revert", d)
	}
	var states []Status
	for _, h := range got.History {
		states = append(states, h.Status)
	}
	if want := []Status{StatusPending, StatusApproved, StatusApplied, StatusReverted}; !slices.Equal(states, want) {
		t.Errorf("history %v, want %v", states, want)
	}
	if want := []event.Type{event.ProposalCreated, event.TuningChanged, event.ProposalApplied, event.TuningChanged, event.ProposalReverted}; !slices.Equal(c.types(), want) {
		t.Errorf("emitted %v, want %v", c.types(), want)
	}
	if digest.Pending() == 0 {
		t.Errorf("no news queued for the digest")
	}
}

// TestMonitorImplements: an applied proposal whose error rate after is
// not worse than its baseline ends implemented.
func TestMonitorImplements(t *testing.T) {
	m := Monitor{Threshold: 0.25, MinBaseline: 3, MinAfter: 3, MaxWatch: time.Hour}
	now := time.Now()
	p := &Proposal{ProposalCreatedData: event.ProposalCreatedData{ID: "p", Pattern: PatternTimeouts, Family: "f",
		Baseline: event.Rate{Errors: 3, Total: 6}}, Applied: now, AppliedSeq: 10}
	tel := NewTelemetry(0, 0)
	tel.Attempts = []Attempt{{Seq: 9, Family: "f", Status: event.TaskFailed}}
	if v, _ := m.Judge(p, tel, now); v != Watch {
		t.Errorf("no sample after: %v, want Watch", v)
	}
	tel.Attempts = append(tel.Attempts, Attempt{Seq: 11, Family: "f", Status: event.TaskSucceeded},
		Attempt{Seq: 12, Family: "f", Status: event.TaskSucceeded}, Attempt{Seq: 13, Family: "f", Status: event.TaskFailed},
		Attempt{Seq: 14, Family: "g", Status: event.TaskFailed})
	v, out := m.Judge(p, tel, now)
	if v != Implement || out.After.Total != 3 || out.After.Errors != 1 {
		t.Errorf("%v %+v, want Implement with 1 of 3", v, out.After)
	}
	if v, _ := m.Judge(p, &Telemetry{}, now.Add(2*time.Hour)); v != Implement {
		t.Errorf("past MaxWatch without samples: %v, want Implement", v)
	}
}

// TestDigestClock: critical news goes out at once, high news at most
// hourly, the rest daily — on the injected clock.
func TestDigestClock(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	sent := map[Severity]int{}
	d := &Digest{Now: func() time.Time { return now }, Send: func(_ context.Context, s Severity, items []Item) error {
		sent[s] += len(items)
		return nil
	}}
	ctx := context.Background()
	d.Add(Item{Proposal: "c", Severity: SeverityCritical})
	d.Add(Item{Proposal: "h", Severity: SeverityHigh})
	d.Add(Item{Proposal: "l", Severity: SeverityLow})
	d.Add(Item{Proposal: "m", Severity: SeverityMedium})
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if sent[SeverityCritical] != 1 || sent[SeverityHigh] != 0 || sent[SeverityLow] != 0 {
		t.Fatalf("at once: %v, want the critical item alone", sent)
	}
	now = now.Add(59 * time.Minute)
	_ = d.Flush(ctx)
	if sent[SeverityHigh] != 0 {
		t.Fatalf("after 59m: %v, want no high batch yet", sent)
	}
	now = now.Add(time.Minute)
	_ = d.Flush(ctx)
	if sent[SeverityHigh] != 1 || sent[SeverityLow] != 0 {
		t.Fatalf("after 1h: %v, want the high batch", sent)
	}
	d.Add(Item{Proposal: "h2", Severity: SeverityHigh})
	now = now.Add(30 * time.Minute)
	_ = d.Flush(ctx)
	if sent[SeverityHigh] != 1 {
		t.Fatalf("30m after the last high batch: %v, want none", sent)
	}
	now = now.Add(23 * time.Hour)
	_ = d.Flush(ctx)
	if sent[SeverityHigh] != 2 || sent[SeverityLow] != 2 {
		t.Fatalf("after a day: %v, want the second high batch and the daily digest of 2", sent)
	}
	if d.Pending() != 0 {
		t.Errorf("%d items still pending", d.Pending())
	}
	// Severity by kind.
	if s := SeverityOf(&Proposal{ProposalCreatedData: event.ProposalCreatedData{Change: event.Change{Kind: event.ChangePolicy}}}); s != SeverityHigh {
		t.Errorf("policy change: %s, want high", s)
	}
	if s := SeverityOf(&Proposal{ProposalCreatedData: event.ProposalCreatedData{Change: event.Change{Kind: event.ChangeNotes}}}); s != SeverityLow {
		t.Errorf("notes change: %s, want low", s)
	}
}

// TestFoldTakesEitherOrder: a change and its proposal.applied, and a
// rollback and its proposal.reverted, travel on different subjects and
// may reach the ledger in either order; the settings end the same.
func TestFoldTakesEitherOrder(t *testing.T) {
	p := plant(t)
	prop := timeoutProposal("p-1")
	prop.Approvers = 1
	p.emit(event.ProposalCreated, "", prop)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"})
	p.emit(event.ProposalApplied, "", event.ProposalAppliedData{Proposal: "p-1"})
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-1", Change: prop.Change})
	if d := p.state().Defaults["f"]; d.Timeout.Std() != time.Minute {
		t.Fatalf("applied before its change: defaults %+v, want f 1m", d)
	}
	p.emit(event.ProposalReverted, "", event.ProposalOutcomeData{Proposal: "p-1", Reason: "worse"})
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-1", Revert: true, Change: prop.Rollback})
	s := p.state()
	if d, ok := s.Defaults["f"]; ok {
		t.Fatalf("reverted before its rollback: defaults %+v, want none", d)
	}
	// A second rollback, or the change again, changes nothing.
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-1", Change: prop.Change})
	if d, ok := p.state().Defaults["f"]; ok {
		t.Fatalf("the change again after the revert: defaults %+v", d)
	}
}

// TestSnapshotRestore: a loop restored from another's snapshot holds the
// same proposals and settings.
func TestSnapshotRestore(t *testing.T) {
	p := plant(t)
	prop := timeoutProposal("p-1")
	prop.Approvers = 1
	p.emit(event.ProposalCreated, "", prop)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"})
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-1", Change: prop.Change})
	a := New(Config{Node: "n1"})
	p.feed(a)
	seq, data, err := a.Snapshot()
	if err != nil || seq == 0 {
		t.Fatalf("snapshot at %d: %v", seq, err)
	}
	b := New(Config{Node: "n1"})
	if err := b.Restore(data); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Proposal("p-1"); got.Status != StatusApproved || got.ChangeSeq == 0 {
		t.Errorf("restored proposal %+v", got)
	}
	if d := b.Settings().Defaults["f"]; d.Timeout.Std() != time.Minute {
		t.Errorf("restored defaults %+v", b.Settings().Defaults)
	}
	if err := b.Restore([]byte("{")); err == nil {
		t.Error("a damaged snapshot restored")
	}
}

// TestPolicyProposalApplied: a gates_approved proposal, approved by the
// two operators the policy asks for at its risk, is applied as a
// policy.recorded of source proposal that every policy fold takes: the
// command is allowed from then on, nothing else changes, and one
// approval alone applies nothing.
func TestPolicyProposalApplied(t *testing.T) {
	p := plant(t)
	pol := loadPolicy(t)
	p.emit(event.PolicyApplied, "", event.PolicyAppliedData{Base: 0, Name: "test", Hash: pol.Hash(), Text: testPolicy, Source: event.PolicyFromApply})
	for i := range 3 {
		run := fmt.Sprintf("g%d", i)
		step := event.Step{ID: "s", Run: "systemctl restart nginx"}
		p.run(run, "ops", step)
		p.emit(event.GateOpened, run, event.GateOpenedData{Decision: event.Decision{Epoch: 1}, Step: "s", Attempt: 1, Kind: event.GatePolicy,
			Subject: "x", Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "restart", Reversible: true}, Approvals: 2})
		p.emit(event.GateDecided, run, event.GateDecidedData{Step: "s", Subject: "x", Action: event.GateAccept})
	}
	c := &capture{p: p}
	l := New(Config{Node: "n1", Emit: c, Ledger: p.store, Now: func() time.Time { return p.now }})
	p.feed(l)
	ctx := context.Background()
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	ps := l.Proposals()
	if len(ps) != 1 || ps[0].Pattern != PatternGatesApproved || ps[0].Approvers != 2 {
		t.Fatalf("proposals %+v, want one gates_approved needing 2 approvers", ps)
	}
	id := ps[0].ID
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: id})
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); !slices.Equal(got, []event.Type{event.ProposalCreated}) {
		t.Fatalf("after one approval of two the loop emitted %v", got)
	}
	p.add(p.operator("bob"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: id})
	p.feed(l)
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	p.feed(l)
	if got, _ := l.Proposal(id); got.Status != StatusApplied || got.ChangeSeq == 0 {
		t.Fatalf("status %s change seq %d, want applied", got.Status, got.ChangeSeq)
	}
	// Every policy fold takes the recorded version (roles/policy.Applied).
	var cur *policy.Policy
	for _, ev := range p.events(1) {
		if ev.Type != event.PolicyApplied && ev.Type != event.PolicyRecorded {
			continue
		}
		var v int64
		if cur != nil {
			v = cur.Version
		}
		next, _, err := policy.Applied(v, ev)
		if err != nil {
			t.Fatalf("policy event %d not taken: %v", ev.Seq, err)
		}
		cur = next
	}
	if cur.Version != 2 {
		t.Fatalf("policy version %d, want 2", cur.Version)
	}
	if v := cur.Judge("systemctl restart nginx"); v.Action != policy.Allow {
		t.Errorf("the remembered command: %s, want allow", v.Action)
	}
	if v := cur.Judge("systemctl restart mysql"); v.Action != policy.Confirm {
		t.Errorf("another restart: %s, want confirm", v.Action)
	}
}

// TestFoldDoesNotWaitForAnEvaluation: while the leader's turn holds the
// telemetry (an evaluation of a day of events takes a second or more),
// a live Fold returns at once: the node's follower is never held up.
func TestFoldDoesNotWaitForAnEvaluation(t *testing.T) {
	p := plant(t)
	step := event.Step{ID: "s", Run: "true"}
	p.run("r", "f", step)
	l := New(Config{Node: "n1", Emit: &capture{p: p}, Now: func() time.Time { return p.now }})
	p.feed(l) // live from here
	p.attempt("r", step, 1, ok(time.Second))
	evs := p.events(p.folded + 1)
	l.tm.Lock() // a turn in progress
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, ev := range evs {
			l.Fold(ev)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		l.tm.Unlock()
		t.Fatal("Fold waited for the turn")
	}
	l.tm.Unlock()
	if err := l.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.tm.Lock()
	n := len(l.tm.tel.Attempts)
	l.tm.Unlock()
	if n != 1 {
		t.Errorf("the telemetry holds %d attempts after the turn, want the 1 folded during it", n)
	}
}

// TestNotesPinEditRetire: planners see the approved notes of their family
// and of none, then the automatic notes no proposal retired or pinned,
// marked automatic; a pin makes an automatic note approved, a retire
// hides it, and their rollback (restore) shows it again.
func TestNotesPinEditRetire(t *testing.T) {
	p := plant(t)
	auto := map[string]string{"apt-get install": "`apt-get install` without -y failed 4 of 5 times", "make": "`make` failed 3 of 3 times"}
	change := func(op, id, text, family string) event.Change {
		return event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: op, ID: id, Text: text, Family: family}}
	}
	apply := func(id string, c, rollback event.Change) {
		t.Helper()
		p.emit(event.ProposalCreated, "", event.ProposalCreatedData{ID: id, Pattern: "manual", Risk: "low", Approvers: 1, Change: c, Rollback: rollback})
		p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: id})
		p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: id, Change: c})
		p.emit(event.ProposalApplied, "", event.ProposalAppliedData{Proposal: id})
	}
	ids := func(ns []Note) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Source+":"+n.ID)
		}
		return out
	}
	apply("p-add", change(event.NoteAdd, "n-web", "web: use the mirror", "web"), change(event.NoteRetire, "n-web", "", "web"))
	apply("p-pin", change(event.NotePin, "auto:make", "`make` needs the toolchain first", ""), change(event.NoteRestore, "auto:make", "", ""))
	apply("p-retire", change(event.NoteRetire, "auto:apt-get install", "", ""), change(event.NoteRestore, "auto:apt-get install", "", ""))
	s := p.state()
	if got, want := ids(s.PlannerNotes("web", auto)), []string{"approved:n-web", "approved:auto:make"}; !slices.Equal(got, want) {
		t.Fatalf("notes of web: %v, want %v", got, want)
	}
	if got, want := ids(s.PlannerNotes("other", auto)), []string{"approved:auto:make"}; !slices.Equal(got, want) {
		t.Fatalf("notes of another family: %v, want %v", got, want)
	}
	// Revert the pin and the retire: the automatic notes are back.
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-pin", Revert: true, Change: change(event.NoteRestore, "auto:make", "", "")})
	p.emit(event.ProposalReverted, "", event.ProposalOutcomeData{Proposal: "p-pin"})
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: "p-retire", Revert: true, Change: change(event.NoteRestore, "auto:apt-get install", "", "")})
	p.emit(event.ProposalReverted, "", event.ProposalOutcomeData{Proposal: "p-retire"})
	s = p.state()
	if got, want := ids(s.PlannerNotes("web", auto)), []string{"approved:n-web", "automatic:auto:apt-get install", "automatic:auto:make"}; !slices.Equal(got, want) {
		t.Fatalf("notes after the reverts: %v, want %v", got, want)
	}
}
