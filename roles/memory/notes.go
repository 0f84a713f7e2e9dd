package memory

import (
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
)

// Notes (kb.noted, protocol version 8) are facts of scope ScopeKB whose
// key is the note's id and whose value is its claim; Fact.Note holds the
// whole note (question, citations, confidence). They are searched with
// the facts, listed and read with them (memory.facts and memory.get of
// scope kb: agentctl kb), quarantined by the same rules, released and
// dropped by the same operator events (scope kb, key the note's id).
// Only kb.noted writes to scope kb.

// ScopeKB is the scope of research notes.
const ScopeKB = "kb"

// TagNote and TagCritical label notes: every note carries TagNote, a
// critical one TagCritical.
const (
	TagNote     = "note"
	TagCritical = "critical"
)

// Quarantine reasons of notes.
const (
	// ReasonOneSource: a critical claim whose citations are not two
	// independent sources (distinct hosts and distinct content hashes).
	ReasonOneSource = "a critical claim without two independent sources (distinct hosts and content hashes)"
	// ReasonModelPlanNote: the research was a step of a model's plan,
	// which chose its sources.
	ReasonModelPlanNote = "written for a research step of a model's plan"
)

// foldNoted stores a planner's note, quarantined when its claim is
// critical and its citations are not two independent sources, or when
// its run is not one whose notes stand alone (unknown to the fold, its
// verdicts overridden, its plan a model's).
func (m *Memory) foldNoted(ev event.Event) {
	var d event.KbNotedData
	if ev.Decode(&d) != nil || d.ID == "" || strings.TrimSpace(d.Claim) == "" || ev.Run == "" ||
		len(d.Claim) > event.MaxNoteClaim || len(d.Citations) == 0 || len(d.Citations) > event.MaxCitations {
		return
	}
	d.Claim = redact.Latest.RedactMember("claim", d.Claim)
	refs := refsOf(ev)
	refs.Step, refs.Attempt = d.Step, d.Attempt
	tags := []string{TagNote}
	if d.Critical {
		tags = append(tags, TagCritical)
	}
	if d.Family == "" {
		if info := m.runs[ev.Run]; info != nil {
			d.Family = info.Family
		}
	}
	f := Fact{Scope: ScopeKB, Key: d.ID, Value: d.Claim, UpdatedAt: ev.Time, Tags: tags, Refs: refs, Note: &d}
	info := m.runs[ev.Run]
	switch {
	case d.Critical && !d.Independent():
		f.Reason = ReasonOneSource
	case info == nil:
		f.Reason = ReasonUnknownRun
	case info.Overridden:
		f.Reason = ReasonOverridden
	case info.Model:
		f.Reason = ReasonModelPlanNote
	}
	f.Quarantined = f.Reason != ""
	m.put(f)
}

// noteText is what the search index reads of a note beside its claim:
// its question and its quotes.
func noteText(n *event.KbNotedData) string {
	if n == nil {
		return ""
	}
	parts := []string{n.Question}
	for _, c := range n.Citations {
		parts = append(parts, c.Quote)
	}
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
}

// releaseNotesLocked releases the quarantined notes synthesise step
// step of run wrote: what a validation step that names "kb/STEP" does
// when it succeeds (release.go), by.
func (m *Memory) releaseNotesLocked(run, step, by string) {
	prefix := run + "/" + step + "/"
	for key, f := range m.mu.facts[ScopeKB] {
		if !f.Quarantined || !strings.HasPrefix(key, prefix) {
			continue
		}
		f.Quarantined, f.Released = false, by
		m.mu.facts[ScopeKB][key] = f
		m.mu.index.add(f)
	}
}
