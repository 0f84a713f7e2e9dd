// Package memory is the memory role: scoped facts with provenance, tags,
// a time to live and quarantine, a full-text index over them, and command
// statistics, all folded from the ledger.
//
// Facts come from memory.put events (an operator's agentctl memory put),
// memory.written events (facts a memory node derives) and memory.recorded
// events (facts a step wrote, recorded by the executor that ran it). A
// fact's scope is "shared", a run id, or a plan family ("family:NAME",
// the runs whose plan names that family); an event with any other scope
// is not folded. Every fact carries Refs: the event that wrote it (id,
// ledger position, signer, type) and, for a step's fact, the run, step
// and attempt.
//
// Quarantine: a fact a step wrote starts quarantined when the step did
// not succeed, when the run's policy verdicts were overridden (a step
// gate accepted or edited by an operator), when the run's plan is a
// model's, or when the fold does not know the run. A quarantined fact is
// shown to operators (Get, Page with Quarantined) and never given to
// plans or prompts (Resolve refuses it, Search leaves it out unless
// asked) until an operator's memory.released; memory.dropped removes a
// fact. The fold is the only judge: nothing else marks or clears it.
//
// Facts are judged like events: a value that holds a secret
// (redact.FindMember, key and value together) is refused by CheckFact
// before it is published, and one that reaches the fold anyway (from a
// build with fewer secret patterns) is stored redacted by this build's
// patterns. A fact with a TTL expires at the event's time plus the TTL,
// judged against the reader's clock; the leader's memory.pruned removes
// the facts expired before its time, so facts and index stay bounded by
// the live facts. Statistics count, per command hash, the successes and
// failures reported in task.finished events.
//
// Invariants:
//
//  1. All state is a fold of the ledger: restarting rebuilds it exactly.
//  2. The fold is pure: expiry is recorded as an absolute time, and only the
//     read path compares it with the clock.
//  3. A restart restores from the role's snapshot (roles.Snapshotter, with
//     a format version) plus the events after it; a snapshot holds every
//     fact, expired ones included, since a reader whose clock is behind the
//     signer's may still see a fact the signer's clock had expired. The
//     search index is not in the snapshot: Restore rebuilds it from the
//     facts.
//  4. A quarantined fact never leaves the role for a plan or a prompt:
//     Resolve is the only read for them, and it refuses it.
package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/roles"
)

// ScopeShared is the scope visible to every run.
const ScopeShared = "shared"

// ErrNotFound is returned for a missing or expired fact.
var ErrNotFound = errors.New("memory: not found")

// ErrBadScope is returned for a scope that is neither ScopeShared, a run
// id nor a plan family ("family:NAME").
var ErrBadScope = errors.New("memory: bad scope")

// ErrQuarantined is returned for a fact that is quarantined: operators see
// it, plans and prompts never do until an operator releases it.
var ErrQuarantined = errors.New("memory: fact is quarantined")

// ValidScope returns nil for a scope facts may have: ScopeShared, ScopeKB
// (research notes, written only by kb.noted), a run
// id (event.ValidRunID; a run-private fact travels with its run id, so it
// must be one), or a plan family, "family:" and a name event.ValidFamily
// accepts. The empty scope is read as ScopeShared. Otherwise the error
// wraps ErrBadScope and says what a scope may be.
func ValidScope(scope string) error {
	if scope == "" || scope == ScopeShared || scope == ScopeKB {
		return nil
	}
	if name, ok := strings.CutPrefix(scope, event.FamilyScopePrefix); ok {
		if err := event.ValidFamily(name); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrBadScope, scope, err)
		}
		return nil
	}
	if err := event.ValidRunID(scope); err != nil {
		return fmt.Errorf("%w: %q is neither %q nor a run id, nor %q (%v)", ErrBadScope, scope, ScopeShared, event.FamilyScopePrefix+"NAME", err)
	}
	return nil
}

// ErrSecret is returned by CheckFact for a fact that holds a secret.
var ErrSecret = errors.New("memory: fact holds a secret")

// CheckFact refuses a fact whose key or value holds a secret, judged as
// events are (the value as key=value, by the newest secret patterns and
// the secret values this process knows). The error names the rule, never
// the secret.
func CheckFact(key, value string) error {
	if kind, ok := redact.FindMember(key, value); ok {
		return fmt.Errorf("%w: the value of %q matches secret rule %s; store a reference ($NAME) instead of the secret", ErrSecret, key, kind)
	}
	return nil
}

// Fact is a stored fact.
type Fact struct {
	Scope     string
	Key       string
	Value     string
	UpdatedAt time.Time
	// ExpiresAt is zero for facts that never expire.
	ExpiresAt time.Time
	// Tags label the fact (memory put --tag, a step's facts).
	Tags []string
	// Refs say what wrote it.
	Refs Refs
	// Quarantined facts are shown to operators, never to plans or
	// prompts; Reason says why it is.
	Quarantined bool
	Reason      string
	// Released names the operator who released it from quarantine, if
	// one did.
	Released string
	// Note is the research note a fact of scope ScopeKB is (notes.go).
	Note *event.KbNotedData
}

// Refs are a fact's provenance: the event that wrote it and, for a fact
// a step wrote, the attempt.
type Refs struct {
	// Event is the id of the event that wrote the fact, Seq its ledger
	// position (ledger lookup by seq), Type its type and Node its signer.
	Event string     `json:"event"`
	Seq   uint64     `json:"seq"`
	Type  event.Type `json:"type"`
	Node  string     `json:"node,omitempty"`
	// Run, Step and Attempt name the attempt that wrote it (a run's
	// operator fact names only the run).
	Run     string `json:"run,omitempty"`
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// Stat counts a command's outcomes.
type Stat struct {
	Successes int `json:"successes"`
	Failures  int `json:"failures"`
}

// Memory is the role.
type Memory struct {
	// folded is the ledger position of the last event folded. Only the
	// goroutine that calls Fold, Snapshot and Restore touches it.
	folded uint64
	// attempts holds the shapes of the shell attempts assigned and not yet
	// finished, by run: live work only (a run's are dropped when it
	// finishes). Only the fold goroutine touches it.
	attempts map[string]map[attemptRef][]string
	// shapeCache is shapesOf's (fold goroutine only).
	shapeCache map[string][]string
	// runs is what the fold knows of live runs to judge their facts
	// (runs.go); fold goroutine only.
	runs map[string]*runInfo
	// releases are the validation steps' pending releases, by run and
	// attempt (release.go); fold goroutine only.
	releases map[string]map[attemptRef]pendingRelease

	mu struct {
		sync.RWMutex
		facts map[string]map[string]Fact // scope → key → fact
		// index is the full-text index over the facts (index.go).
		index *index
		// families are the live runs' plan families (runs.go), read by
		// MemoryValue from other goroutines.
		families map[string]string
		// expiries orders the facts by expiry (expiry.go).
		expiries expiries
		stats    map[string]Stat
		// shapes counts outcomes by command shape (Shapes), at most
		// MaxShapes; overflow counts outcomes of shapes beyond that.
		shapes   map[string]Stat
		overflow int
	}
}

var (
	_ roles.Role        = (*Memory)(nil)
	_ roles.Folder      = (*Memory)(nil)
	_ roles.Snapshotter = (*Memory)(nil)
)

// New returns an empty memory.
func New() *Memory {
	m := &Memory{attempts: map[string]map[attemptRef][]string{}, runs: map[string]*runInfo{},
		releases: map[string]map[attemptRef]pendingRelease{}}
	m.mu.facts = map[string]map[string]Fact{}
	m.mu.index = newIndex()
	m.mu.families = map[string]string{}
	m.mu.stats = map[string]Stat{}
	m.mu.shapes = map[string]Stat{}
	return m
}

// Name is "memory".
func (m *Memory) Name() string { return event.RoleMemory }

// Start does nothing: the memory role is driven by folds.
func (m *Memory) Start(context.Context) error { return nil }

// Stop does nothing.
func (m *Memory) Stop(context.Context) error { return nil }

// Settled does nothing.
func (m *Memory) Settled(bool) {}

// Fold applies a committed event.
func (m *Memory) Fold(ev event.Event) {
	m.folded = ev.Seq
	switch ev.Type {
	case event.MemoryPut:
		m.foldPut(ev)
	case event.MemoryWritten:
		m.foldWritten(ev)
	case event.MemoryRecorded:
		m.foldRecorded(ev)
	case event.MemoryReleased:
		m.foldReleased(ev)
	case event.MemoryDropped:
		m.foldDropped(ev)
	case event.MemoryPruned:
		m.foldPruned(ev)
	case event.KbNoted:
		m.foldNoted(ev) // notes.go
	case event.GoalSubmitted, event.PlanProposed, event.PlanAccepted, event.GateDecided, event.GateDecidedFor:
		m.foldRun(ev) // runs.go
	case event.TaskAssigned:
		m.foldAssigned(ev)
	case event.RunFinished:
		delete(m.attempts, ev.Run)
		delete(m.runs, ev.Run)
		delete(m.releases, ev.Run)
		m.setFamily(ev.Run, "")
	case event.TaskFinished:
		m.foldFinished(ev)
	}
}

// foldFinished counts a task's outcome for its command and shapes.
func (m *Memory) foldFinished(ev event.Event) {
	var d finishedRef
	if ev.Decode(&d) != nil {
		return
	}
	m.foldShapes(ev.Run, d)
	m.foldReleases(ev.Run, d) // release.go
	if d.CommandHash == "" {
		return
	}
	m.mu.Lock()
	s := m.mu.stats[d.CommandHash]
	switch d.Status {
	case event.TaskSucceeded:
		s.Successes++
	case event.TaskFailed:
		s.Failures++
	}
	m.mu.stats[d.CommandHash] = s
	m.mu.Unlock()
}

func scopeOf(s string) string {
	if s == "" {
		return ScopeShared
	}
	return s
}

// refsOf are the refs of the event ev.
func refsOf(ev event.Event) Refs {
	return Refs{Event: ev.ID, Seq: ev.Seq, Type: ev.Type, Node: ev.Node, Run: ev.Run}
}

// put stores f, replacing the fact of its scope and key, and indexes it.
func (m *Memory) put(f Fact) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.mu.facts[f.Scope]
	if sc == nil {
		sc = map[string]Fact{}
		m.mu.facts[f.Scope] = sc
	}
	sc[f.Key] = f
	m.mu.index.add(f)
	m.trackExpiryLocked(f)
}

// removeLocked removes the fact scope/key and its index entry.
func (m *Memory) removeLocked(scope, key string) {
	sc := m.mu.facts[scope]
	if _, ok := sc[key]; !ok {
		return
	}
	delete(sc, key)
	if len(sc) == 0 {
		delete(m.mu.facts, scope)
	}
	m.mu.index.remove(scope, key)
}

// Get returns the fact scope/key, quarantined or not (what an operator
// sees: Fact.Quarantined says which), unless it is missing or expired at
// now (ErrNotFound), or scope is not one facts may have (ErrBadScope).
func (m *Memory) Get(scope, key string, now time.Time) (Fact, error) {
	if err := ValidScope(scope); err != nil {
		return Fact{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.mu.facts[scopeOf(scope)][key]
	if !ok || expired(f, now) {
		return Fact{}, fmt.Errorf("%w: %s/%s", ErrNotFound, scopeOf(scope), key)
	}
	return f, nil
}

// Resolve returns the fact scope/key for a plan or a prompt: like Get,
// but a quarantined fact is refused with ErrQuarantined and the reason.
func (m *Memory) Resolve(scope, key string, now time.Time) (Fact, error) {
	f, err := m.Get(scope, key, now)
	if err != nil {
		return Fact{}, err
	}
	if f.Quarantined {
		return Fact{}, fmt.Errorf("%w: %s/%s (%s); an operator may release it: agentctl memory quarantine release %s %s",
			ErrQuarantined, f.Scope, f.Key, f.Reason, f.Scope, f.Key)
	}
	return f, nil
}

// List returns the live facts of scope ("" for every scope), quarantined
// ones included, sorted by scope and key.
func (m *Memory) List(scope string, now time.Time) []Fact {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Fact
	for sc, facts := range m.mu.facts {
		if scope != "" && sc != scope {
			continue
		}
		for _, f := range facts {
			if !expired(f, now) {
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scope != out[j].Scope {
			return out[i].Scope < out[j].Scope
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// Stats returns the outcome counts of a command hash.
func (m *Memory) Stats(hash string) Stat {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.stats[hash]
}

func expired(f Fact, now time.Time) bool {
	return !f.ExpiresAt.IsZero() && !now.Before(f.ExpiresAt)
}
