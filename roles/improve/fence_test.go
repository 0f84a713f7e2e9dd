package improve

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// notesChange is a change that adds the approved note id.
func notesChange(op, id, text string) event.Change {
	return event.Change{Kind: event.ChangeNotes, Setting: event.SettingPlannerNotes, Note: &event.NoteChange{Op: op, ID: id, Text: text}}
}

// TestDeposedLeaderTuningFenced: a tuning.changed (and proposal.applied)
// that carries the epoch of a leader deposed by a newer leader.elected
// is in the ledger and changes nothing, like a deposed leader's
// assignment; the same change from the leader in force applies.
func TestDeposedLeaderTuningFenced(t *testing.T) {
	p := plant(t)
	add := notesChange(event.NoteAdd, "n-web", "web: use the mirror")
	p.emit(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "n1"})
	p.emit(event.ProposalCreated, "", event.ProposalCreatedData{ID: "p-1", Pattern: "manual", Risk: "low", Approvers: 1,
		Change: add, Rollback: notesChange(event.NoteRetire, "n-web", "")})
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"})
	p.emit(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 2}, Leader: "n2"})
	// The deposed leader (epoch 1) applies late: raw payloads, as its
	// build wrote them.
	raw := func(v map[string]any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p.emit(event.TuningChanged, "", raw(map[string]any{"proposal": "p-1", "change": add, "epoch": 1}))
	p.emit(event.ProposalApplied, "", raw(map[string]any{"proposal": "p-1", "validation": NotesValidation(), "epoch": 1}))
	s := p.state()
	if len(s.Notes) != 0 || s.Proposals["p-1"].Status != StatusApproved || s.Proposals["p-1"].ChangeSeq != 0 {
		t.Fatalf("notes %+v, status %s, change at %d: a deposed leader's apply took effect", s.Notes, s.Proposals["p-1"].Status, s.Proposals["p-1"].ChangeSeq)
	}
	// The leader in force applies it.
	p.emit(event.TuningChanged, "", raw(map[string]any{"proposal": "p-1", "change": add, "epoch": 2}))
	p.emit(event.ProposalApplied, "", raw(map[string]any{"proposal": "p-1", "validation": NotesValidation(), "epoch": 2}))
	s = p.state()
	if len(s.Notes) != 1 || s.Proposals["p-1"].Status != StatusApplied {
		t.Fatalf("notes %+v, status %s: the leader in force's apply did not take effect", s.Notes, s.Proposals["p-1"].Status)
	}
}

// TestLoopStampsItsEpoch: the leader's loop stamps what it emits with
// the epoch it leads with, so a leader that was deposed without noticing
// applies nothing: its tuning.changed and proposal.applied are in the
// ledger and every fold ignores them. A loop whose node does not lead
// (epoch 0) emits nothing.
func TestLoopStampsItsEpoch(t *testing.T) {
	p := plant(t)
	add := notesChange(event.NoteAdd, "n-web", "web: use the mirror")
	p.emit(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "n1"})
	p.emit(event.ProposalCreated, "", event.ProposalCreatedData{ID: "p-1", Pattern: "manual", Risk: "low", Approvers: 1,
		Change: add, Rollback: notesChange(event.NoteRetire, "n-web", "")})
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"})
	c := &capture{p: p}
	var epoch uint64
	l := New(Config{Node: "n1", Emit: c, Now: func() time.Time { return p.now }, Epoch: func() uint64 { return epoch }})
	p.feed(l)
	ctx := context.Background()
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); len(got) != 0 {
		t.Fatalf("a node that does not lead emitted %v", got)
	}
	// n1 won epoch 1 but n2 was elected since; n1 has not noticed.
	epoch = 1
	p.emit(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 2}, Leader: "n2"})
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []event.Type{event.TuningChanged, event.ProposalApplied}; !slices.Equal(c.types(), want) {
		t.Fatalf("emitted %v, want %v", c.types(), want)
	}
	for _, d := range c.drafts {
		var e struct {
			Epoch uint64 `json:"epoch"`
		}
		if err := json.Unmarshal(d.Data, &e); err != nil || e.Epoch != 1 {
			t.Fatalf("%s carries epoch %d (%v), want 1", d.Type, e.Epoch, err)
		}
	}
	s := p.state()
	if len(s.Notes) != 0 || s.Proposals["p-1"].Status != StatusApproved || s.Fenced != 2 {
		t.Fatalf("notes %+v, status %s, fenced %d: want no note, approved, 2 fenced", s.Notes, s.Proposals["p-1"].Status, s.Fenced)
	}
	// Once its fold shows the newer leader, it does not act at all.
	p.feed(l)
	before := len(c.types())
	if err := l.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.types(); len(got) != before {
		t.Fatalf("a leader its own fold shows deposed emitted %v", got[before:])
	}
}
