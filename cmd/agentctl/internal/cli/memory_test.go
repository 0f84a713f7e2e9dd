package cli

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

func TestMemory(t *testing.T) {
	h := newHarness(t).withNode()
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h.node.with(func(f *fakeNode) {
		f.facts = []api.Fact{
			{Scope: "shared", Key: "deploy.target", Value: "staging", UpdatedAt: time.Now()},
			{Scope: runA, Key: "cache", Value: "warm", UpdatedAt: time.Now(), ExpiresAt: &exp},
		}
		f.runs = []api.Run{{ID: runA, Goal: "a", Status: event.RunRunning}}
	})

	r := h.run("memory", "put", "shared", "maintenance", "on", "--ttl", "2h")
	if r.code != 0 || !strings.Contains(r.stdout, "memory.put shared/maintenance published") {
		t.Fatalf("memory put = %+v", r)
	}
	r = h.run("memory", "put", runA, "note", "x", "-o", "json")
	if got := decodeJSON[map[string]any](t, r.stdout); r.code != 0 || got["scope"] != runA || got["event"] == "" {
		t.Fatalf("memory put json = %+v", r)
	}
	evs := h.events()
	if len(evs) != 2 || evs[0].Type != event.MemoryPut {
		t.Fatalf("published %+v", evs)
	}
	var d event.MemoryPutData
	if err := evs[0].Events[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, event.MemoryPutData{Scope: "shared", Key: "maintenance", Value: "on", TTL: event.Duration(2 * time.Hour)}) || evs[0].Events[0].Run != "" {
		t.Errorf("shared put = %+v run %q", d, evs[0].Events[0].Run)
	}
	if evs[1].Events[0].Run != runA {
		t.Errorf("run-scoped put has run %q", evs[1].Events[0].Run)
	}

	if r = h.run("memory", "get", "shared", "deploy.target"); r.code != 0 || r.stdout != "staging\n" {
		t.Errorf("memory get = %+v", r)
	}
	r = h.run("memory", "get", runA, "cache", "-o", "json")
	if got := decodeJSON[api.Fact](t, r.stdout); got.Value != "warm" || got.ExpiresAt == nil {
		t.Errorf("memory get json = %+v", r)
	}
	if r = h.run("memory", "get", "shared", "nope"); r.code != ExitError || !strings.Contains(r.stderr, "hint: list facts with") {
		t.Errorf("memory get missing = %+v", r)
	}

	r = h.run("memory", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "SCOPE") || !strings.Contains(r.stdout, "deploy.target") || !strings.Contains(r.stdout, "cache") {
		t.Errorf("memory ls = %+v", r)
	}
	r = h.run("memory", "ls", "shared", "-o", "json")
	if got := decodeJSON[[]api.Fact](t, r.stdout); len(got) != 1 || got[0].Key != "deploy.target" {
		t.Errorf("memory ls shared = %+v", r)
	}
}

func TestMemoryScopeIsSharedOrARun(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) {
		f.runs = []api.Run{{ID: runA, Goal: "a", Status: event.RunRunning}, {ID: runB, Goal: "b", Status: event.RunRunning}}
	})
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"memory", "put", "not a run", "k", "v"}, ExitUsage, `SCOPE "not a run" is neither "shared" nor a run id`},
		{[]string{"memory", "put", "a.b", "k", "v"}, ExitUsage, `SCOPE "a.b" is neither "shared" nor a run id`},
		{[]string{"memory", "put", "Shared", "k", "v"}, ExitError, `scope "Shared" is neither "shared" nor the id of a run: no run has that id`},
		{[]string{"memory", "put", "bogus", "k", "v"}, ExitError, `scope "bogus" is neither "shared" nor the id of a run`},
		{[]string{"memory", "put", runA[:12], "k", "v"}, ExitUsage, "is a prefix of run " + runA + ": give the whole run id"},
		{[]string{"memory", "put", "0190", "k", "v"}, ExitError, "must be a whole run id"},
		{[]string{"memory", "get", "not a run", "k"}, ExitUsage, `SCOPE "not a run" is neither "shared" nor a run id`},
		{[]string{"memory", "ls", "x/y"}, ExitUsage, `SCOPE "x/y" is neither "shared" nor a run id`},
	}
	for _, tt := range tests {
		r := h.run(tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v = %+v; want exit %d and %q", tt.args, r, tt.code, tt.want)
		}
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events published for bad scopes", n)
	}
}

// A fact that holds a secret is refused before anything is published, and
// the error names the rule, never the secret.
func TestMemoryPutRefusesSecrets(t *testing.T) {
	h := newHarness(t).withNode()
	for _, kv := range [][2]string{{"note", "password hunter2xyz"}, {"DB_PASSWORD", "hunter2xyz"}, {"db", "mysql -u root -phunter2xyz"}} {
		r := h.run("memory", "put", "shared", kv[0], kv[1])
		if r.code == 0 || !strings.Contains(r.stderr, "secret rule") || strings.Contains(r.stderr+r.stdout, "hunter2xyz") {
			t.Errorf("memory put %s %q = %+v", kv[0], kv[1], r)
		}
	}
	if evs := h.events(); len(evs) != 0 {
		t.Fatalf("published %+v", evs)
	}
}
