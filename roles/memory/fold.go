package memory

import (
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
)

// Quarantine reasons (Fact.Reason), stable words operators read.
const (
	ReasonFailedStep = "written by a step that did not succeed"
	ReasonOverridden = "written by a run whose policy verdicts were overridden"
	ReasonModel      = "written by a step of a model's plan"
	ReasonUnknownRun = "written by a run this memory does not know"
)

// cleanTags returns the valid tags of tags, sorted, each once.
func cleanTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if event.ValidTag(t) == nil {
			out = append(out, t)
		}
	}
	if len(out) > event.MaxTags {
		out = out[:event.MaxTags]
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// foldPut stores an operator's fact: never quarantined.
func (m *Memory) foldPut(ev event.Event) {
	var d event.MemoryPutData
	if ev.Decode(&d) != nil || d.Key == "" || ValidScope(d.Scope) != nil || d.Scope == ScopeKB {
		return // scope kb holds notes alone (notes.go)
	}
	f := Fact{Scope: scopeOf(d.Scope), Key: d.Key, Value: redact.Latest.RedactMember(d.Key, d.Value), UpdatedAt: ev.Time,
		Tags: cleanTags(d.Tags), Refs: refsOf(ev)}
	if d.TTL > 0 {
		f.ExpiresAt = ev.Time.Add(d.TTL.Std())
	}
	m.put(f)
}

// foldWritten stores a fact a memory node derived.
func (m *Memory) foldWritten(ev event.Event) {
	var d event.MemoryWrittenData
	if ev.Decode(&d) != nil || d.Key == "" || ValidScope(d.Scope) != nil || d.Scope == ScopeKB {
		return
	}
	m.put(Fact{Scope: scopeOf(d.Scope), Key: d.Key, Value: redact.Latest.RedactMember(d.Key, d.Value), UpdatedAt: ev.Time,
		ExpiresAt: d.Expires, Refs: refsOf(ev)})
}

// foldRecorded stores a fact a step wrote, in the scope it names resolved
// for its run, quarantined by the rules of the package doc.
func (m *Memory) foldRecorded(ev event.Event) {
	var d event.MemoryRecordedData
	if ev.Decode(&d) != nil || d.Key == "" || ev.Run == "" || len(d.Value) > event.MaxFactValue {
		return
	}
	info := m.runs[ev.Run]
	var scope string
	switch d.Scope {
	case "", event.FactScopeRun:
		scope = ev.Run
	case event.FactScopeShared:
		scope = ScopeShared
	case event.FactScopeFamily:
		if info == nil || info.Family == "" {
			return // a run without a family has no family scope to write to
		}
		scope = event.FamilyScopePrefix + info.Family
	default:
		return
	}
	if ValidScope(scope) != nil {
		return
	}
	refs := refsOf(ev)
	refs.Step, refs.Attempt = d.Step, d.Attempt
	f := Fact{Scope: scope, Key: d.Key, Value: redact.Latest.RedactMember(d.Key, d.Value), UpdatedAt: ev.Time,
		Tags: cleanTags(d.Tags), Refs: refs}
	if d.TTL > 0 {
		f.ExpiresAt = ev.Time.Add(d.TTL.Std())
	}
	switch {
	case d.Status != event.TaskSucceeded:
		f.Reason = ReasonFailedStep
	case info == nil:
		f.Reason = ReasonUnknownRun
	case info.Overridden:
		f.Reason = ReasonOverridden
	case info.Model:
		f.Reason = ReasonModel
	}
	f.Quarantined = f.Reason != ""
	m.put(f)
}

// target returns the fact an operator's release or drop names, if it
// exists and is the version the operator saw (Seq, when set).
func (m *Memory) targetLocked(d event.MemoryQuarantineData) (Fact, bool) {
	if d.Key == "" || ValidScope(d.Scope) != nil {
		return Fact{}, false
	}
	f, ok := m.mu.facts[scopeOf(d.Scope)][d.Key]
	if !ok || (d.Seq != 0 && d.Seq != f.Refs.Seq) {
		return Fact{}, false
	}
	return f, true
}

// foldReleased lifts a fact's quarantine.
func (m *Memory) foldReleased(ev event.Event) {
	var d event.MemoryQuarantineData
	if ev.Decode(&d) != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.targetLocked(d)
	if !ok || !f.Quarantined {
		return
	}
	f.Quarantined, f.Released = false, ev.Node
	m.mu.facts[f.Scope][f.Key] = f
	m.mu.index.add(f)
}

// foldDropped removes a fact.
func (m *Memory) foldDropped(ev event.Event) {
	var d event.MemoryQuarantineData
	if ev.Decode(&d) != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.targetLocked(d); ok {
		m.removeLocked(f.Scope, f.Key)
	}
}

// foldPruned removes every fact expired at or before the leader's time.
func (m *Memory) foldPruned(ev event.Event) {
	var d event.MemoryPrunedData
	if ev.Decode(&d) != nil || d.Before.IsZero() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for scope, facts := range m.mu.facts {
		for key, f := range facts {
			if !f.ExpiresAt.IsZero() && !f.ExpiresAt.After(d.Before) {
				m.removeLocked(scope, key)
			}
		}
	}
}
