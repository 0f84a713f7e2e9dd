package improve

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// runs plants one run of family per result, each running cmd as step
// "s" once, and returns the ledger position of the last.
func (p *planted) runs(prefix, family, cmd string, results ...event.TaskFinishedData) {
	p.t.Helper()
	step := event.Step{ID: "s", Run: cmd}
	for i, fin := range results {
		run := fmt.Sprintf("%s%d", prefix, i)
		p.run(run, family, step)
		p.attempt(run, step, 1, fin)
	}
}

func repeat(fin event.TaskFinishedData, n int) []event.TaskFinishedData {
	out := make([]event.TaskFinishedData, n)
	for i := range out {
		out[i] = fin
	}
	return out
}

// noteFindings are the proposals of the note rules over the ledger.
func noteFindings(p *planted) []event.ProposalCreatedData {
	tel := p.telemetry()
	tel.Trim(p.now)
	var out []event.ProposalCreatedData
	for _, x := range Evaluate(DefaultRules(), tel, Input{Now: p.now, State: p.state()}) {
		if x.Pattern == PatternNoteHelps || x.Pattern == PatternNoteUnhelpful || x.Pattern == PatternNoteUnused {
			out = append(out, x)
		}
	}
	return out
}

// approvedShapeNote plants an approved note about cmd's shape in family
// (a shape_failures proposal that failed 3 of 4 times before), applied
// and implemented.
func approvedShapeNote(p *planted, family, shape string) string {
	p.t.Helper()
	id := "n-" + family
	prop := event.ProposalCreatedData{ID: "p-" + family, Pattern: PatternShapeFailures, Subject: shape, Family: family, Risk: "low", Approvers: 1,
		Change:   notesChange(event.NoteAdd, id, "`"+shape+"` fails: find what it needs first"),
		Rollback: notesChange(event.NoteRetire, id, ""), Baseline: event.Rate{Errors: 3, Total: 4}}
	prop.Change.Note.Family, prop.Rollback.Note.Family = family, family
	p.emit(event.ProposalCreated, "", prop)
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: prop.ID})
	p.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: prop.ID, Change: prop.Change})
	p.emit(event.ProposalApplied, "", event.ProposalAppliedData{Proposal: prop.ID, Validation: NotesValidation()})
	p.emit(event.ProposalImplemented, "", event.ProposalOutcomeData{Proposal: prop.ID, Reason: "held"})
	if s := p.state(); len(s.Notes) != 1 || s.Proposals[prop.ID].Status != StatusImplemented {
		p.t.Fatalf("planted note: notes %+v, status %s", s.Notes, s.Proposals[prop.ID].Status)
	}
	return id
}

// TestNoteRulePinsAHelpingAutoNote: `make` failed 3 times (the automatic
// note appears), then succeeded 6 times of 6: the rule proposes to pin
// auto:make (rollback: restore), checked by the forbidden-change rules
// only. Approved, the leader applies it as a planner.notes change:
// planners see the pinned note as approved and no longer the automatic
// one; when the shape then fails more than before the note, the monitor
// reverts the pin and the automatic note is back.
func TestNoteRulePinsAHelpingAutoNote(t *testing.T) {
	p := plant(t)
	p.runs("bad", "web", "make", repeat(failed(2), 3)...)
	p.runs("good", "web", "make", repeat(ok(time.Second), 6)...)
	got := noteFindings(p)
	if len(got) != 1 || got[0].Pattern != PatternNoteHelps {
		t.Fatalf("proposals %+v, want one note_helps", got)
	}
	pin := got[0]
	if c := pin.Change.Note; c == nil || c.Op != event.NotePin || c.ID != "auto:make" || c.Text == "" || c.Family != "" {
		t.Fatalf("change %+v, want a pin of auto:make with a text", pin.Change.Note)
	}
	if r := pin.Rollback.Note; r == nil || r.Op != event.NoteRestore || r.ID != "auto:make" {
		t.Fatalf("rollback %+v, want the restore of auto:make", pin.Rollback.Note)
	}
	if pin.Validation.Method != "forbidden-checks" || len(pin.Evidence) != 9 || pin.Baseline.Errors != 0 || pin.Baseline.Total != 6 {
		t.Fatalf("validation %q, evidence %v, baseline %+v: want forbidden-checks, 9 attempts, 0 of 6 since the note",
			pin.Validation.Method, pin.Evidence, pin.Baseline)
	}

	// Through the loop: proposed, approved, applied, then reverted.
	c := &capture{p: p}
	mon := Monitor{Threshold: 0.25, MinBaseline: 3, MinAfter: 3, MaxWatch: time.Hour}
	l := New(Config{Node: "n1", Emit: c, Now: func() time.Time { return p.now }, Monitor: mon})
	ctx := context.Background()
	step := func() {
		t.Helper()
		p.feed(l)
		if err := l.Step(ctx); err != nil {
			t.Fatal(err)
		}
		p.feed(l)
	}
	step()
	if _, ok := l.Proposal(pin.ID); !ok {
		t.Fatalf("the loop did not propose %s: %v", pin.ID, c.types())
	}
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: pin.ID})
	step()
	auto := map[string]string{"make": "`make` failed 3 of 3 times"}
	notes := l.PlannerNotes("web", auto)
	if len(notes) != 1 || notes[0].ID != "auto:make" || notes[0].Source != SourceApproved || notes[0].Text != pin.Change.Note.Text {
		t.Fatalf("notes after the pin %+v, want the pinned note only, approved", notes)
	}
	p.runs("worse", "web", "make", repeat(failed(2), 3)...)
	step()
	if got, _ := l.Proposal(pin.ID); got.Status != StatusReverted {
		t.Fatalf("pin is %s after 3 failures of 3, want reverted", got.Status)
	}
	if notes := l.PlannerNotes("web", auto); len(notes) != 1 || notes[0].Source != SourceAutomatic {
		t.Fatalf("notes after the revert %+v, want the automatic note back", notes)
	}
}

// TestNoteRuleRetiresAnUnhelpfulAutoNote: since its automatic note
// appeared, `make` failed 4 of 5 times (3 of 3 before): the rule proposes
// to retire auto:make (rollback: restore).
func TestNoteRuleRetiresAnUnhelpfulAutoNote(t *testing.T) {
	p := plant(t)
	p.runs("bad", "web", "make", repeat(failed(2), 3)...)
	p.runs("still", "web", "make", failed(2), ok(time.Second), failed(2), failed(2), failed(2))
	got := noteFindings(p)
	if len(got) != 1 || got[0].Pattern != PatternNoteUnhelpful {
		t.Fatalf("proposals %+v, want one note_unhelpful", got)
	}
	if c := got[0].Change.Note; c == nil || c.Op != event.NoteRetire || c.ID != "auto:make" {
		t.Fatalf("change %+v, want the retire of auto:make", got[0].Change.Note)
	}
	if r := got[0].Rollback.Note; r == nil || r.Op != event.NoteRestore || r.ID != "auto:make" {
		t.Fatalf("rollback %+v, want the restore of auto:make", got[0].Rollback.Note)
	}
	if b := got[0].Baseline; b.Errors != 4 || b.Total != 5 || got[0].Validation.Method != "forbidden-checks" {
		t.Fatalf("baseline %+v, validation %q: want 4 of 5 while the note was shown, forbidden-checks", b, got[0].Validation.Method)
	}
}

// TestNoteRuleRetiresAnUnhelpfulApprovedNote: since an approved note
// about `make` in family web (3 failures of 4 before it) was applied, the
// shape failed 4 of 5 times there: the rule proposes to retire it, with
// the note itself as rollback.
func TestNoteRuleRetiresAnUnhelpfulApprovedNote(t *testing.T) {
	p := plant(t)
	id := approvedShapeNote(p, "web", "make")
	p.runs("after", "web", "make", failed(2), failed(2), ok(time.Second), failed(2), failed(2))
	got := noteFindings(p)
	if len(got) != 1 || got[0].Pattern != PatternNoteUnhelpful || got[0].Subject != id || got[0].Family != "web" {
		t.Fatalf("proposals %+v, want one note_unhelpful of %s in web", got, id)
	}
	if c := got[0].Change.Note; c == nil || c.Op != event.NoteRetire || c.ID != id {
		t.Fatalf("change %+v, want the retire of %s", got[0].Change.Note, id)
	}
	if r := got[0].Rollback.Note; r == nil || r.Op != event.NoteAdd || r.ID != id || r.Text == "" || r.Family != "web" {
		t.Fatalf("rollback %+v, want the note %s of web again", got[0].Rollback.Note, id)
	}
	if len(got[0].Evidence) != 5 {
		t.Fatalf("evidence %v, want the 5 attempts since the note", got[0].Evidence)
	}
}

// TestNoteRuleRetiresAnUnusedNote: an approved note about `make` in web,
// applied more than a window ago; the window's 3 runs of web ran `go
// test` only: the rule proposes to retire it as unused.
func TestNoteRuleRetiresAnUnusedNote(t *testing.T) {
	p := plant(t)
	id := approvedShapeNote(p, "web", "make")
	p.now = p.now.Add(DefaultWindow + time.Hour)
	p.runs("now", "web", "go test ./...", repeat(ok(time.Second), 3)...)
	got := noteFindings(p)
	if len(got) != 1 || got[0].Pattern != PatternNoteUnused || got[0].Subject != id {
		t.Fatalf("proposals %+v, want one note_unused of %s", got, id)
	}
	if c := got[0].Change.Note; c == nil || c.Op != event.NoteRetire || c.ID != id || len(got[0].Evidence) != 3 {
		t.Fatalf("change %+v evidence %v, want the retire of %s on the 3 attempts", got[0].Change.Note, got[0].Evidence, id)
	}
}

// TestNoteRulesLeaveHealthyNotes: nothing is proposed for a note that
// helps some (an approved note whose shape failed 1 of 5 times since,
// 3 of 4 before), an automatic note with fewer than 5 attempts since it
// appeared, one whose shape fails less but not half as often, an old
// note whose command the window's too few runs did not use, nor a pin
// of an automatic note already pinned.
func TestNoteRulesLeaveHealthyNotes(t *testing.T) {
	p := plant(t)
	approvedShapeNote(p, "web", "make")
	p.runs("web", "web", "make", failed(2), ok(time.Second), ok(time.Second), ok(time.Second), ok(time.Second))
	p.runs("npm", "web", "npm ci", append(repeat(failed(1), 3), repeat(ok(time.Second), 4)...)...)
	p.runs("py", "web", "pytest", append(repeat(failed(1), 3), failed(1), failed(1), failed(1), ok(time.Second), ok(time.Second))...)
	if got := noteFindings(p); len(got) != 0 {
		t.Fatalf("proposals %+v for healthy notes, want none", got)
	}

	old := plant(t)
	approvedShapeNote(old, "web", "make")
	old.now = old.now.Add(DefaultWindow + time.Hour)
	old.runs("now", "web", "go test ./...", repeat(ok(time.Second), 2)...)
	if got := noteFindings(old); len(got) != 0 {
		t.Fatalf("proposals %+v with 2 runs of web in the window, want none", got)
	}

	pinned := plant(t)
	pin := event.ProposalCreatedData{ID: "p-pin", Pattern: "manual", Risk: "low", Approvers: 1,
		Change:   notesChange(event.NotePin, "auto:make", "`make` needs the toolchain"),
		Rollback: notesChange(event.NoteRestore, "auto:make", "")}
	pinned.emit(event.ProposalCreated, "", pin)
	pinned.add(pinned.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: pin.ID})
	pinned.emit(event.TuningChanged, "", event.TuningChangedData{Proposal: pin.ID, Change: pin.Change})
	pinned.emit(event.ProposalApplied, "", event.ProposalAppliedData{Proposal: pin.ID, Validation: NotesValidation()})
	pinned.runs("bad", "web", "make", repeat(failed(2), 3)...)
	pinned.runs("good", "web", "make", repeat(ok(time.Second), 6)...)
	got := noteFindings(pinned)
	if slices.ContainsFunc(got, func(x event.ProposalCreatedData) bool { return x.Pattern == PatternNoteHelps }) {
		t.Fatalf("proposals %+v: a pin of a note already pinned", got)
	}
}
