package memory

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrBadRef is returned for a ${memory:SCOPE/KEY} reference that names no
// scope a run may read.
var ErrBadRef = errors.New("memory: bad reference")

// MemoryValue resolves one "SCOPE/KEY" reference of a step of run, as a
// leader does when it judges and assigns the step: SCOPE "run" is the
// run's own scope, "family" its plan family's ("family:NAME"), and
// "shared", "family:NAME" or a run id name themselves. A missing or
// expired fact is ErrNotFound and a quarantined one ErrQuarantined, with
// what to do; plans and prompts never read a quarantined fact.
func (m *Memory) MemoryValue(run, ref string, now time.Time) (event.MemoryValue, error) {
	scope, key, ok := strings.Cut(ref, "/")
	if !ok || key == "" {
		return event.MemoryValue{}, fmt.Errorf("%w: ${memory:%s}: write ${memory:SCOPE/KEY}", ErrBadRef, ref)
	}
	switch scope {
	case event.FactScopeRun:
		scope = run
	case event.FactScopeFamily:
		m.mu.RLock()
		family := m.mu.families[run]
		m.mu.RUnlock()
		if family == "" {
			return event.MemoryValue{}, fmt.Errorf("%w: ${memory:%s}: the run's plan names no family (family: NAME)", ErrBadRef, ref)
		}
		scope = event.FamilyScopePrefix + family
	}
	if err := ValidScope(scope); err != nil || scope == "" {
		return event.MemoryValue{}, fmt.Errorf("%w: ${memory:%s}: %v", ErrBadRef, ref, err)
	}
	f, err := m.Resolve(scope, key, now)
	if err != nil {
		return event.MemoryValue{}, fmt.Errorf("${memory:%s}: %w", ref, err)
	}
	return event.MemoryValue{Ref: ref, Scope: f.Scope, Key: f.Key, Value: f.Value, Seq: f.Refs.Seq}, nil
}
