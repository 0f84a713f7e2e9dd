package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// registerMemory answers memory.facts and memory.search from f.facts, in
// pages of f.size: the ranking itself is roles/memory's (tested there); a
// hit here is a fact whose key or value holds a word of the query.
func (f *fakeNode) registerMemory(s *api.Server) {
	api.HandleTyped(s, api.MethodMemoryFacts, func(_ context.Context, req api.MemoryFactsRequest) (api.Page[api.Fact], error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var rows []api.Fact
		for _, fa := range f.facts {
			if (req.Scope != "" && fa.Scope != req.Scope) || !strings.HasPrefix(fa.Key, req.Prefix) ||
				(req.Tag != "" && !slices.Contains(fa.Tags, req.Tag)) || (req.Quarantined && !fa.Quarantined) ||
				(req.Cursor != "" && fa.Scope+"/"+fa.Key <= req.Cursor) {
				continue
			}
			rows = append(rows, fa)
		}
		n := f.size(req.Limit)
		if len(rows) <= n {
			return api.Page[api.Fact]{Items: append([]api.Fact{}, rows...), End: true}, nil
		}
		return api.Page[api.Fact]{Items: rows[:n], Next: rows[n-1].Scope + "/" + rows[n-1].Key}, nil
	})
	api.HandleTyped(s, api.MethodMemorySearch, func(_ context.Context, req api.MemorySearchRequest) (api.MemorySearchPage[api.SearchHit], error) {
		if err := req.Validate(); err != nil {
			return api.MemorySearchPage[api.SearchHit]{}, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		var hits []api.SearchHit
		for _, fa := range f.facts {
			if fa.Quarantined && !req.Quarantined {
				continue
			}
			score := 0.0
			for _, w := range strings.Fields(req.Query) {
				if strings.Contains(fa.Key+" "+fa.Value, w) {
					score++
				}
			}
			if score > 0 {
				hits = append(hits, api.SearchHit{Fact: fa, Score: score})
			}
		}
		off, _ := strconv.Atoi(req.Cursor)
		n := f.size(req.Limit)
		out := api.MemorySearchPage[api.SearchHit]{Total: len(hits)}
		end := min(off+n, len(hits))
		out.Items = append([]api.SearchHit{}, hits[min(off, len(hits)):end]...)
		out.End = end == len(hits)
		if !out.End {
			out.Next = strconv.Itoa(end)
		}
		return out, nil
	})
}

func TestMemoryTagsShowAndLsFilters(t *testing.T) {
	h := newHarness(t).withNode()
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h.node.with(func(f *fakeNode) {
		f.facts = []api.Fact{
			{Scope: "family:nightly", Key: "nginx.version", Value: "1.24", UpdatedAt: time.Now(), Quarantined: true, Reason: "written by a step of a model's plan",
				Refs: &api.Refs{Event: "0190-ev", Seq: 41, Type: "memory.recorded", Node: "node-b", Run: runA, Step: "probe", Attempt: 2}},
			{Scope: "shared", Key: "deploy.region", Value: "eu-west", Tags: []string{"infra"}, UpdatedAt: time.Now(), ExpiresAt: &exp,
				Refs: &api.Refs{Event: "0190-put", Seq: 7, Type: "memory.put", Node: "alice"}},
			{Scope: "shared", Key: "deploy.target", Value: "staging", UpdatedAt: time.Now()},
			{Scope: "shared", Key: "web.port", Value: "8080", Tags: []string{"infra"}, UpdatedAt: time.Now()},
		}
	})

	r := h.run("memory", "put", "shared", "deploy.region", "eu-west", "--ttl", "24h", "--tag", "infra", "--tag", "eu")
	if r.code != 0 {
		t.Fatalf("memory put --tag = %+v", r)
	}
	r = h.run("memory", "put", "family:nightly", "last.good", "v1")
	if r.code != 0 {
		t.Fatalf("memory put family = %+v", r)
	}
	evs := h.events()
	var d event.MemoryPutData
	if err := evs[0].Events[0].Decode(&d); err != nil || strings.Join(d.Tags, ",") != "infra,eu" || d.TTL != event.Duration(24*time.Hour) {
		t.Fatalf("put with tags = %+v %v", d, err)
	}
	if evs[1].Events[0].Run != "" {
		t.Fatalf("a family fact belongs to no run, got %q", evs[1].Events[0].Run)
	}
	for _, bad := range [][]string{
		{"memory", "put", "shared", "k", "v", "--tag", "two words"},
		{"memory", "put", "family:no/slash", "k", "v"},
		{"memory", "ls", "--tag", "a b"},
	} {
		if r := h.run(bad...); r.code != ExitUsage {
			t.Errorf("%v = %+v, want a usage error", bad, r)
		}
	}

	r = h.run("memory", "ls", "shared", "--prefix", "deploy.", "--tag", "infra", "-o", "json")
	if got := decodeJSON[[]api.Fact](t, r.stdout); r.code != 0 || len(got) != 1 || got[0].Key != "deploy.region" {
		t.Fatalf("memory ls --prefix --tag = %+v", r)
	}
	r = h.run("memory", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "nginx.version") || !strings.Contains(r.stdout, "web.port") {
		t.Fatalf("memory ls over pages = %+v", r)
	}

	r = h.run("memory", "show", "family:nightly", "nginx.version")
	for _, want := range []string{"1.24", "quarantined:  yes, written by a step of a model's plan", "memory.recorded 0190-ev, seq 41, signed by node-b",
		"run:          " + runA, "step:         probe, attempt 2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("memory show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = h.run("memory", "show", "shared", "deploy.region", "-o", "json")
	if got := decodeJSON[api.Fact](t, r.stdout); got.Refs == nil || got.Refs.Seq != 7 || got.ExpiresAt == nil {
		t.Errorf("memory show json = %+v", r)
	}

	r = h.run("memory", "quarantine", "ls", "-o", "json")
	if got := decodeJSON[[]api.Fact](t, r.stdout); len(got) != 1 || got[0].Key != "nginx.version" {
		t.Fatalf("quarantine ls = %+v", r)
	}
}

func TestMemorySearchPages(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) {
		for _, k := range []string{"a", "b", "c"} {
			f.facts = append(f.facts, api.Fact{Scope: "shared", Key: "nginx." + k, Value: "reload " + k, UpdatedAt: time.Now()})
		}
		f.facts = append(f.facts, api.Fact{Scope: "shared", Key: "secret.plan", Value: "nginx", Quarantined: true})
	})
	r := h.run("memory", "search", "nginx reload")
	if r.code != 0 || !strings.Contains(r.stdout, "nginx.a") || !strings.Contains(r.stdout, "next page: agentctl memory search \"nginx reload\" --cursor 2") {
		t.Fatalf("memory search = %+v", r)
	}
	r = h.run("memory", "search", "nginx reload", "--cursor", "2", "-o", "json")
	got := decodeJSON[searchResult](t, r.stdout)
	if r.code != 0 || got.Total != 3 || len(got.Hits) != 1 || got.Hits[0].Fact.Key != "nginx.c" || got.Next != "" {
		t.Fatalf("second page = %+v", r)
	}
	r = h.run("memory", "search", "nginx", "--quarantined", "-o", "json")
	if got := decodeJSON[searchResult](t, r.stdout); got.Total != 4 {
		t.Fatalf("search --quarantined = %+v", r)
	}
	for _, bad := range [][]string{{"memory", "search", " "}, {"memory", "search", "x", "--limit", "101"}} {
		if r := h.run(bad...); r.code != ExitUsage {
			t.Errorf("%v = %+v, want a usage error", bad, r)
		}
	}
	if r := h.run("memory", "search", "x", "--cursor", "soon"); r.code != ExitError || !strings.Contains(r.stderr, "not one a search page gave") {
		t.Errorf("bad cursor = %+v", r)
	}
}

func TestMemoryQuarantineReleaseAndDrop(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) {
		f.facts = []api.Fact{
			{Scope: "shared", Key: "q", Value: "v", Quarantined: true, Refs: &api.Refs{Seq: 12}},
			{Scope: "shared", Key: "clean", Value: "v", Refs: &api.Refs{Seq: 13}},
		}
	})
	r := h.run("memory", "quarantine", "release", "shared", "q", "--reason", "checked")
	if r.code != 0 || !strings.Contains(r.stdout, "memory.released shared/q published") {
		t.Fatalf("release = %+v", r)
	}
	if r := h.run("memory", "quarantine", "release", "shared", "clean"); r.code != ExitError || !strings.Contains(r.stderr, "is not quarantined") {
		t.Fatalf("release of a clean fact = %+v", r)
	}
	if r := h.run("memory", "quarantine", "drop", "shared", "missing"); r.code != ExitError || !strings.Contains(r.stderr, "no live fact shared/missing") {
		t.Fatalf("drop of a missing fact = %+v", r)
	}
	r = h.run("memory", "quarantine", "drop", "shared", "clean", "-o", "json")
	if got := decodeJSON[quarantineResult](t, r.stdout); r.code != 0 || got.Seq != 13 || got.Action != "drop" {
		t.Fatalf("drop = %+v", r)
	}
	evs := h.events()
	if len(evs) != 2 || evs[0].Type != event.MemoryReleased || evs[1].Type != event.MemoryDropped {
		t.Fatalf("published %+v", evs)
	}
	var d event.MemoryQuarantineData
	if err := evs[0].Events[0].Decode(&d); err != nil || d != (event.MemoryQuarantineData{Scope: "shared", Key: "q", Seq: 12, Reason: "checked"}) {
		t.Fatalf("released = %+v %v", d, err)
	}
}

func TestGoalSubmitFamily(t *testing.T) {
	h := newHarness(t).withNode()
	if r := h.run("goal", "submit", "--family", "nightly", "check", "the", "logs"); r.code != 0 {
		t.Fatalf("goal submit --family = %+v", r)
	}
	evs := h.events()
	var d event.GoalSubmittedData
	if len(evs) != 1 || evs[0].Events[0].Decode(&d) != nil || d.Family != "nightly" || d.Text != "check the logs" {
		t.Fatalf("published %+v (%+v)", evs, d)
	}
	for _, bad := range [][]string{
		{"goal", "submit", "--family", "no/slash", "x"},
		{"goal", "submit", "--family", "nightly", "-f", "plan.yaml"},
	} {
		if r := h.run(bad...); r.code != ExitUsage {
			t.Errorf("%v = %+v, want a usage error", bad, r)
		}
	}
}

// The memory events read as sentences in audit tail.
func TestSummaryOfMemoryEvents(t *testing.T) {
	for _, tt := range []struct {
		typ  event.Type
		data any
		want string
	}{
		{event.MemoryRecorded, event.MemoryRecordedData{Scope: "family", Key: "nginx.version", Value: "1.24", Step: "probe", Attempt: 1, Status: event.TaskSucceeded},
			"family/nginx.version = 1.24 (step probe attempt 1 succeeded)"},
		{event.MemoryReleased, event.MemoryQuarantineData{Scope: "shared", Key: "k", Seq: 3}, "shared/k released"},
		{event.MemoryDropped, event.MemoryQuarantineData{Scope: "shared", Key: "k"}, "shared/k dropped"},
	} {
		raw, err := json.Marshal(tt.data)
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(api.AuditLine{Type: string(tt.typ), Data: raw}); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.typ, got, tt.want)
		}
	}
}
