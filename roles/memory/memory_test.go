package memory_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

func ev(t event.Type, at time.Time, v any) event.Event {
	d := event.MustDraft(t, "", v)
	return event.Event{ID: d.ID, Type: t, Time: at, Data: d.Data}
}

func TestFactsScopesAndTTL(t *testing.T) {
	m := memory.New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Fold(ev(event.MemoryPut, t0, event.MemoryPutData{Scope: "shared", Key: "region", Value: "eu"}))
	m.Fold(ev(event.MemoryPut, t0, event.MemoryPutData{Scope: "run-1", Key: "tmp", Value: "x", TTL: event.Duration(time.Minute)}))
	m.Fold(ev(event.MemoryPut, t0.Add(time.Second), event.MemoryPutData{Key: "region", Value: "us"}))

	f, err := m.Get("shared", "region", t0.Add(time.Hour))
	if err != nil || f.Value != "us" {
		t.Fatalf("shared/region = %+v, %v; want us (last write wins, empty scope is shared)", f, err)
	}
	if _, err := m.Get("run-1", "tmp", t0.Add(30*time.Second)); err != nil {
		t.Fatalf("run-1/tmp before expiry: %v", err)
	}
	if _, err := m.Get("run-1", "tmp", t0.Add(time.Minute)); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("run-1/tmp after expiry: %v, want ErrNotFound", err)
	}
	if got := m.List("", t0.Add(time.Hour)); len(got) != 1 || got[0].Key != "region" {
		t.Fatalf("list all after expiry = %+v", got)
	}
	if got := m.List("run-1", t0); len(got) != 1 {
		t.Fatalf("list run-1 = %+v", got)
	}
}

func TestCommandStats(t *testing.T) {
	m := memory.New()
	now := time.Now()
	for _, st := range []event.TaskStatus{event.TaskSucceeded, event.TaskSucceeded, event.TaskFailed, event.TaskSkipped} {
		m.Fold(ev(event.TaskFinished, now, event.TaskFinishedData{Step: "a", Status: st, CommandHash: "abc"}))
	}
	if s := m.Stats("abc"); s.Successes != 2 || s.Failures != 1 {
		t.Fatalf("stats = %+v, want 2 successes 1 failure", s)
	}
}

func TestScopes(t *testing.T) {
	for _, ok := range []string{"", memory.ScopeShared, "run-1", event.NewID()} {
		if err := memory.ValidScope(ok); err != nil {
			t.Errorf("ValidScope(%q) = %v", ok, err)
		}
	}
	m := memory.New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, bad := range []string{"not a run", "a.b", "shared.x", "x/y", strings.Repeat("r", event.MaxRunIDLen+1)} {
		err := memory.ValidScope(bad)
		if !errors.Is(err, memory.ErrBadScope) || !strings.Contains(err.Error(), `is neither "shared" nor a run id, nor "family:NAME"`) {
			t.Errorf("ValidScope(%q) = %v; want ErrBadScope", bad, err)
		}
		// Neither an operator's put nor a written fact with such a scope
		// is folded, and reading it says why.
		m.Fold(ev(event.MemoryPut, t0, event.MemoryPutData{Scope: bad, Key: "k", Value: "v"}))
		m.Fold(ev(event.MemoryWritten, t0, event.MemoryWrittenData{Scope: bad, Key: "w", Value: "v"}))
		if _, err := m.Get(bad, "k", t0); !errors.Is(err, memory.ErrBadScope) {
			t.Errorf("Get(%q) = %v; want ErrBadScope", bad, err)
		}
	}
	if got := m.List("", t0); len(got) != 0 {
		t.Errorf("facts with bad scopes were folded: %+v", got)
	}
}
