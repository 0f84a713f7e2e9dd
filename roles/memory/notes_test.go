package memory_test

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

// note is a kb.noted payload with citations from hosts (one a host).
func note(id, claim string, critical bool, hosts ...string) event.KbNotedData {
	d := event.KbNotedData{ID: id, Step: "notes", Attempt: 1, Research: "read", Question: "Which port does the service use?",
		Critical: critical, Claim: claim, Confidence: 0.8}
	for i, h := range hosts {
		d.Citations = append(d.Citations, event.Citation{SHA256: string(rune('a'+i)) + "0f", Quote: "listens on port 8443", Host: h})
	}
	return d
}

func TestNotesAreQuarantinedAndSearchedLikeFacts(t *testing.T) {
	h := &history{m: memory.New()}
	h.startRun("file-run", "file", "nightly")
	h.startRun("llm-run", "llm", "")
	h.fold("file-run", event.KbNoted, note("file-run/notes/1", "The service listens on port 8443.", false, "docs.example.com"))
	h.fold("file-run", event.KbNoted, note("file-run/notes/2", "Port 8443 carries the admin console.", true, "docs.example.com"))
	h.fold("file-run", event.KbNoted, note("file-run/notes/3", "Port 8443 needs TLS.", true, "docs.example.com", "wiki.example.org"))
	same := note("file-run/notes/4", "Port 8443 is the only port.", true, "docs.example.com", "wiki.example.org")
	same.Citations[1].SHA256 = same.Citations[0].SHA256 // one page on two hosts: not independent
	h.fold("file-run", event.KbNoted, same)
	h.fold("llm-run", event.KbNoted, note("llm-run/notes/1", "Port 8443 is open.", false, "docs.example.com"))

	for _, c := range []struct {
		id     string
		reason string
	}{
		{"file-run/notes/1", ""},
		{"file-run/notes/2", memory.ReasonOneSource},
		{"file-run/notes/3", ""},
		{"file-run/notes/4", memory.ReasonOneSource},
		{"llm-run/notes/1", memory.ReasonModelPlanNote},
	} {
		f, err := h.m.Get(memory.ScopeKB, c.id, t0)
		if err != nil {
			t.Fatalf("note %s: %v", c.id, err)
		}
		if f.Reason != c.reason || f.Quarantined != (c.reason != "") || f.Note == nil || f.Note.ID != c.id || f.Refs.Step != "notes" {
			t.Errorf("note %s = %+v; want reason %q", c.id, f, c.reason)
		}
	}
	if f, _ := h.m.Get(memory.ScopeKB, "file-run/notes/1", t0); f.Note.Family != "nightly" {
		t.Errorf("note of a run of family nightly has family %q", f.Note.Family)
	}
	if _, err := h.m.Resolve(memory.ScopeKB, "file-run/notes/2", t0); err == nil {
		t.Error("a quarantined note resolved for a prompt")
	}

	res := h.m.Search("port 8443", t0, memory.SearchOptions{})
	got := map[string]bool{}
	for _, hit := range res.Hits {
		got[hit.Fact.Key] = true
	}
	if !got["file-run/notes/1"] || !got["file-run/notes/3"] || got["file-run/notes/2"] || got["file-run/notes/4"] || got["llm-run/notes/1"] {
		t.Fatalf("search found %v; want notes 1 and 3 of file-run alone", got)
	}
	// The quote is searched too.
	if res := h.m.Search("listens", t0, memory.SearchOptions{Scope: memory.ScopeKB}); res.Total != 2 {
		t.Fatalf("search of a quote's word found %d notes, want 2", res.Total)
	}

	// An operator releases a quarantined note (scope kb, its id).
	h.fold("", event.MemoryReleased, event.MemoryQuarantineData{Scope: memory.ScopeKB, Key: "file-run/notes/2", Reason: "checked"})
	if _, err := h.m.Resolve(memory.ScopeKB, "file-run/notes/2", t0); err != nil {
		t.Fatalf("released note: %v", err)
	}

	// Nothing but kb.noted writes to scope kb.
	h.fold("", event.MemoryPut, event.MemoryPutData{Scope: memory.ScopeKB, Key: "forged", Value: "x"})
	if _, err := h.m.Get(memory.ScopeKB, "forged", t0); err == nil {
		t.Fatal("memory.put wrote to scope kb")
	}
}

func TestNotesSurviveASnapshot(t *testing.T) {
	h := &history{m: memory.New()}
	h.startRun("file-run", "file", "")
	h.fold("file-run", event.KbNoted, note("file-run/notes/1", "The service listens on port 8443.", true, "docs.example.com"))
	_, snap, err := h.m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	m := memory.New()
	if err := m.Restore(snap); err != nil {
		t.Fatal(err)
	}
	f, err := m.Get(memory.ScopeKB, "file-run/notes/1", t0)
	if err != nil || f.Note == nil || len(f.Note.Citations) != 1 || !f.Quarantined || f.Reason != memory.ReasonOneSource {
		t.Fatalf("restored note = %+v, %v", f, err)
	}
	if res := m.Search("8443", t0, memory.SearchOptions{Quarantined: true}); res.Total != 1 {
		t.Fatalf("search after restore: %d hits", res.Total)
	}
}

// TestATestStepReleasesCriticalNotes: a validation step naming kb/STEP
// releases the quarantined notes of that synthesise step of its run when
// it succeeds in an operator's plan — the test step that stands in for a
// second source — and not when it fails, nor another step's notes.
func TestATestStepReleasesCriticalNotes(t *testing.T) {
	h := &history{m: memory.New()}
	h.startRun("file-run", "file", "")
	h.fold("file-run", event.KbNoted, note("file-run/notes/1", "Port 8443 carries the admin console.", true, "docs.example.com"))
	other := note("file-run/other/1", "Port 8443 needs TLS.", true, "docs.example.com")
	other.Step = "other"
	h.fold("file-run", event.KbNoted, other)
	validate := func(attempt int, st event.TaskStatus) {
		h.fold("file-run", event.TaskAssigned, event.TaskAssignedData{Step: event.Step{ID: "check", Kind: event.KindShell, Run: "true",
			Releases: []string{"kb/notes"}}, Attempt: attempt, Node: "n"})
		h.fold("file-run", event.TaskFinished, event.TaskFinishedData{Step: "check", Attempt: attempt, Status: st})
	}
	validate(1, event.TaskFailed)
	if f, _ := h.m.Get(memory.ScopeKB, "file-run/notes/1", t0); !f.Quarantined {
		t.Fatal("a failed test step released a note")
	}
	validate(2, event.TaskSucceeded)
	f, err := h.m.Resolve(memory.ScopeKB, "file-run/notes/1", t0)
	if err != nil || f.Released != "step check of run file-run" {
		t.Fatalf("note after its test step: %+v %v", f, err)
	}
	if f, _ := h.m.Get(memory.ScopeKB, "file-run/other/1", t0); !f.Quarantined {
		t.Fatal("a test step released another step's notes")
	}
	if err := event.ValidFactRef("kb/notes"); err != nil {
		t.Fatalf("kb/notes is not a valid release: %v", err)
	}
}
