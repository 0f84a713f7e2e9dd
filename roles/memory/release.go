package memory

import (
	"cmp"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// Validation steps (Step.Releases): a step that names quarantined facts
// releases them when it succeeds — if the run's plan is an operator's
// plan file, or the step's assignment carried an operator's approval (a
// gate). A model's plan never releases a fact by itself.

// pendingRelease is what an assigned attempt will release if it succeeds.
type pendingRelease struct {
	Refs []string `json:"refs"`
	// Approved is set when the assignment carried an approval.
	Approved bool `json:"approved,omitempty"`
}

// maxReleasesPerRun bounds the attempts remembered per run.
const maxReleasesPerRun = 1024

// noteReleases remembers the releases of an assigned attempt.
func (m *Memory) noteReleases(run string, ref attemptRef, refs []string, approved bool) {
	if len(refs) == 0 || run == "" {
		return
	}
	if len(refs) > event.MaxFactsPerStep {
		refs = refs[:event.MaxFactsPerStep]
	}
	byAttempt := m.releases[run]
	if byAttempt == nil {
		byAttempt = map[attemptRef]pendingRelease{}
		m.releases[run] = byAttempt
	}
	if len(byAttempt) >= maxReleasesPerRun {
		return
	}
	byAttempt[ref] = pendingRelease{Refs: slices.Clone(refs), Approved: approved}
}

// foldReleases releases what a finished attempt named, if it succeeded
// and may.
func (m *Memory) foldReleases(run string, d finishedRef) {
	ref := attemptRef{d.Step, d.Attempt}
	p, ok := m.releases[run][ref]
	if !ok {
		return
	}
	delete(m.releases[run], ref)
	info := m.runs[run]
	if d.Status != event.TaskSucceeded || !(p.Approved || (info != nil && !info.Model)) {
		return
	}
	by := "step " + d.Step + " of run " + run
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range p.Refs {
		scope, key, ok := strings.Cut(r, "/")
		if !ok {
			continue
		}
		switch scope {
		case ScopeKB:
			m.releaseNotesLocked(run, key, by) // notes.go
			continue
		case event.FactScopeRun:
			scope = run
		case event.FactScopeFamily:
			if info == nil || info.Family == "" {
				continue
			}
			scope = event.FamilyScopePrefix + info.Family
		}
		f, ok := m.mu.facts[scope][key]
		if !ok || !f.Quarantined {
			continue
		}
		f.Quarantined, f.Released = false, by
		m.mu.facts[scope][key] = f
		m.mu.index.add(f)
	}
}

// snapRelease is a pending release in a snapshot.
type snapRelease struct {
	Run     string `json:"run"`
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	pendingRelease
}

// snapReleases are the pending releases, sorted.
func (m *Memory) snapReleases() []snapRelease {
	out := []snapRelease{}
	for run, as := range m.releases {
		for ref, p := range as {
			out = append(out, snapRelease{Run: run, Step: ref.step, Attempt: ref.attempt, pendingRelease: p})
		}
	}
	slices.SortFunc(out, func(a, b snapRelease) int {
		return cmp.Or(cmp.Compare(a.Run, b.Run), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Attempt, b.Attempt))
	})
	return out
}
