package memory

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// SnapshotVersion is the snapshot format this version writes. It only moves
// forward; Restore refuses versions it does not know.
const SnapshotVersion = 3

// Version 2 added the command shapes and the live attempts; version 3 the
// facts' tags, refs and quarantine and the live runs' judging state. An
// older snapshot is refused, so the memory is folded again from the
// ledger.

// ErrSnapshotVersion: the snapshot was written by an unknown format version.
var ErrSnapshotVersion = errors.New("memory: unsupported snapshot version")

// snapshot is the serialized fold state. Facts are sorted by scope and key
// and stats are a JSON object (sorted keys), so equal states give equal
// bytes.
type snapshot struct {
	Version int             `json:"version"`
	Seq     uint64          `json:"seq"`
	Facts   []snapFact      `json:"facts"`
	Stats   map[string]Stat `json:"stats"`
	// Shapes counts outcomes by command shape; Overflow those past
	// MaxShapes.
	Shapes   map[string]Stat `json:"shapes"`
	Overflow int             `json:"overflow,omitempty"`
	// Attempts are the live shell attempts' shapes, sorted.
	Attempts []snapAttempt `json:"attempts"`
	// Runs are the live runs' judging state (runs.go), by run id.
	Runs map[string]*runInfo `json:"runs,omitempty"`
	// Releases are the validation steps' pending releases, sorted.
	Releases []snapRelease `json:"releases,omitempty"`
}

type snapAttempt struct {
	Run     string   `json:"run"`
	Step    string   `json:"step"`
	Attempt int      `json:"attempt"`
	Shapes  []string `json:"shapes"`
}

type snapFact struct {
	Scope       string    `json:"scope"`
	Key         string    `json:"key"`
	Value       string    `json:"value"`
	UpdatedAt   time.Time `json:"updated_at"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	Tags        []string  `json:"tags,omitempty"`
	Refs        Refs      `json:"refs"`
	Quarantined bool      `json:"quarantined,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Released    string    `json:"released,omitempty"`
	// Note is a research note's whole record (scope kb).
	Note *event.KbNotedData `json:"note,omitempty"`
}

// SnapshotName is "memory".
func (m *Memory) SnapshotName() string { return event.RoleMemory }

// Snapshot returns every fact (expired ones too: expiry is judged on read)
// and the command statistics, with the ledger position they reflect.
func (m *Memory) Snapshot() (uint64, []byte, error) {
	snap := snapshot{Version: SnapshotVersion, Seq: m.folded, Facts: []snapFact{}}
	m.mu.RLock()
	for _, facts := range m.mu.facts {
		for _, f := range facts {
			snap.Facts = append(snap.Facts, snapFact(f))
		}
	}
	snap.Stats = make(map[string]Stat, len(m.mu.stats))
	for h, st := range m.mu.stats {
		snap.Stats[h] = st
	}
	snap.Shapes = make(map[string]Stat, len(m.mu.shapes))
	for sh, st := range m.mu.shapes {
		snap.Shapes[sh] = st
	}
	snap.Overflow = m.mu.overflow
	m.mu.RUnlock()
	snap.Runs = m.runs
	snap.Releases = m.snapReleases()
	snap.Attempts = []snapAttempt{}
	for run, as := range m.attempts {
		for ref, shapes := range as {
			snap.Attempts = append(snap.Attempts, snapAttempt{Run: run, Step: ref.step, Attempt: ref.attempt, Shapes: shapes})
		}
	}
	slices.SortFunc(snap.Attempts, func(a, b snapAttempt) int {
		return cmp.Or(cmp.Compare(a.Run, b.Run), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Attempt, b.Attempt))
	})
	slices.SortFunc(snap.Facts, func(a, b snapFact) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Key, b.Key))
	})
	b, err := json.Marshal(snap)
	if err != nil {
		return 0, nil, fmt.Errorf("memory: marshal snapshot at seq %d: %w", snap.Seq, err)
	}
	return snap.Seq, b, nil
}

// Restore replaces the state with a snapshot's. A snapshot of an unknown
// version, or one that does not decode, holds a fact without scope or key
// or with a scope ValidScope refuses, the same fact twice, or a negative
// count, is refused and the state is left as it was.
func (m *Memory) Restore(data []byte) error {
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("memory: unmarshal snapshot: %w", err)
	}
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("%w: %d (want %d)", ErrSnapshotVersion, snap.Version, SnapshotVersion)
	}
	facts := map[string]map[string]Fact{}
	for i, sf := range snap.Facts {
		if sf.Scope == "" || sf.Key == "" {
			return fmt.Errorf("memory: unmarshal snapshot: fact %d has no scope or key", i)
		}
		if err := ValidScope(sf.Scope); err != nil {
			// The fold never keeps such a fact: folding from the start
			// rebuilds the state without it.
			return fmt.Errorf("memory: unmarshal snapshot: fact %d: %w", i, err)
		}
		sc := facts[sf.Scope]
		if sc == nil {
			sc = map[string]Fact{}
			facts[sf.Scope] = sc
		}
		if _, dup := sc[sf.Key]; dup {
			return fmt.Errorf("memory: unmarshal snapshot: fact %s/%s appears twice", sf.Scope, sf.Key)
		}
		sc[sf.Key] = Fact(sf)
	}
	stats := make(map[string]Stat, len(snap.Stats))
	for h, st := range snap.Stats {
		if h == "" || st.Successes < 0 || st.Failures < 0 {
			return fmt.Errorf("memory: unmarshal snapshot: bad statistics for command %q: %+v", h, st)
		}
		stats[h] = st
	}
	shapes := make(map[string]Stat, len(snap.Shapes))
	for sh, st := range snap.Shapes {
		if sh == "" || st.Successes < 0 || st.Failures < 0 {
			return fmt.Errorf("memory: unmarshal snapshot: bad statistics for shape %q: %+v", sh, st)
		}
		shapes[sh] = st
	}
	attempts := map[string]map[attemptRef][]string{}
	for _, a := range snap.Attempts {
		if a.Run == "" || a.Step == "" || len(a.Shapes) == 0 {
			return fmt.Errorf("memory: unmarshal snapshot: bad attempt %+v", a)
		}
		if attempts[a.Run] == nil {
			attempts[a.Run] = map[attemptRef][]string{}
		}
		attempts[a.Run][attemptRef{a.Step, a.Attempt}] = a.Shapes
	}
	runs, families := map[string]*runInfo{}, map[string]string{}
	for id, r := range snap.Runs {
		if id == "" || r == nil {
			return fmt.Errorf("memory: unmarshal snapshot: bad run %q", id)
		}
		runs[id] = r
		if r.Family != "" {
			families[id] = r.Family
		}
	}
	releases := map[string]map[attemptRef]pendingRelease{}
	for _, r := range snap.Releases {
		if r.Run == "" || r.Step == "" || len(r.Refs) == 0 {
			return fmt.Errorf("memory: unmarshal snapshot: bad release %+v", r)
		}
		if releases[r.Run] == nil {
			releases[r.Run] = map[attemptRef]pendingRelease{}
		}
		releases[r.Run][attemptRef{r.Step, r.Attempt}] = r.pendingRelease
	}
	idx := newIndex()
	var exp expiries
	for _, sc := range facts {
		for _, f := range sc {
			idx.add(f)
			if !f.ExpiresAt.IsZero() {
				exp = append(exp, expiry{at: f.ExpiresAt.UnixNano(), scope: f.Scope, key: f.Key, seq: f.Refs.Seq})
			}
		}
	}
	heap.Init(&exp)
	m.mu.Lock()
	m.mu.facts, m.mu.index, m.mu.families, m.mu.expiries = facts, idx, families, exp
	m.mu.stats, m.mu.shapes, m.mu.overflow = stats, shapes, snap.Overflow
	m.mu.Unlock()
	m.runs, m.releases = runs, releases
	m.attempts = attempts
	m.folded = snap.Seq
	return nil
}
