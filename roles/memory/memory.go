// Package memory is the memory role: scoped facts with a time to live, and
// command statistics, folded from the ledger.
//
// Facts come from memory.put events (an operator's agentctl memory put) and
// memory.written events (facts a memory node derives). A fact's scope is
// "shared" or a run id (ValidScope; an event with any other scope is not
// folded). Facts are judged like events: a value that holds a secret
// (redact.FindMember, key and value together) is refused by CheckFact
// before it is published, and one that reaches the fold anyway (from a
// build with fewer secret patterns) is stored redacted by this build's
// patterns (not by the secret values a node knows, which differ between
// nodes). A fact with a TTL expires at the event's time plus the TTL,
// judged against the reader's clock. Statistics count, per command
// hash, the successes and failures reported in task.finished events.
//
// Invariants:
//
//  1. All state is a fold of the ledger: restarting rebuilds it exactly.
//  2. The fold is pure: expiry is recorded as an absolute time, and only the
//     read path compares it with the clock.
//  3. A restart restores from the role's snapshot (roles.Snapshotter, with
//     a format version) plus the events after it; a snapshot holds every
//     fact, expired ones included, since a reader whose clock is behind the
//     signer's may still see a fact the signer's clock had expired.
package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

// ErrBadScope is returned for a scope that is neither ScopeShared nor a
// run id.
var ErrBadScope = errors.New("memory: bad scope")

// ValidScope returns nil for a scope facts may have: ScopeShared, or a run
// id (event.ValidRunID; a run-private fact travels with its run id, so it
// must be one). The empty scope is read as ScopeShared. Otherwise the error
// wraps ErrBadScope and says what a scope may be.
func ValidScope(scope string) error {
	if scope == "" || scope == ScopeShared {
		return nil
	}
	if err := event.ValidRunID(scope); err != nil {
		return fmt.Errorf("%w: %q is neither %q nor a run id (%v)", ErrBadScope, scope, ScopeShared, err)
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

	mu struct {
		sync.RWMutex
		facts map[string]map[string]Fact // scope → key → fact
		stats map[string]Stat
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
	m := &Memory{attempts: map[string]map[attemptRef][]string{}}
	m.mu.facts = map[string]map[string]Fact{}
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
		var d event.MemoryPutData
		if ev.Decode(&d) != nil || d.Key == "" || ValidScope(d.Scope) != nil {
			return
		}
		f := Fact{Scope: scopeOf(d.Scope), Key: d.Key, Value: redact.Latest.RedactMember(d.Key, d.Value), UpdatedAt: ev.Time}
		if d.TTL > 0 {
			f.ExpiresAt = ev.Time.Add(d.TTL.Std())
		}
		m.put(f)
	case event.MemoryWritten:
		var d event.MemoryWrittenData
		if ev.Decode(&d) != nil || d.Key == "" || ValidScope(d.Scope) != nil {
			return
		}
		m.put(Fact{Scope: scopeOf(d.Scope), Key: d.Key, Value: redact.Latest.RedactMember(d.Key, d.Value), UpdatedAt: ev.Time, ExpiresAt: d.Expires})
	case event.TaskAssigned:
		m.foldAssigned(ev)
	case event.RunFinished:
		delete(m.attempts, ev.Run)
	case event.TaskFinished:
		var d finishedRef
		if ev.Decode(&d) != nil {
			return
		}
		m.foldShapes(ev.Run, d)
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
}

func scopeOf(s string) string {
	if s == "" {
		return ScopeShared
	}
	return s
}

func (m *Memory) put(f Fact) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.mu.facts[f.Scope]
	if sc == nil {
		sc = map[string]Fact{}
		m.mu.facts[f.Scope] = sc
	}
	sc[f.Key] = f
}

// Get returns the fact scope/key unless it is missing or expired at now
// (ErrNotFound), or scope is not one facts may have (ErrBadScope).
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

// List returns the live facts of scope ("" for every scope), sorted by
// scope and key.
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
