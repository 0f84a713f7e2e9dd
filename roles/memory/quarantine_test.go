package memory_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

// history folds events for runs, numbering them from 1 like a ledger.
type history struct {
	m   *memory.Memory
	seq uint64
}

func (h *history) fold(run string, t event.Type, v any) event.Event {
	h.seq++
	e := ev(t, t0.Add(time.Duration(h.seq)*time.Second), v)
	e.Run, e.Seq, e.Node = run, h.seq, "node-"+string(t.Category())
	h.m.Fold(e)
	return e
}

// startRun folds a run's goal and its accepted first plan.
func (h *history) startRun(run, source, family string) {
	h.fold(run, event.GoalSubmitted, event.GoalSubmittedData{Goal: "g", Text: "t", Family: "from-goal"})
	h.fold(run, event.PlanProposed, event.PlanProposedData{Revision: 1, Source: source, Plan: event.Plan{Family: family}})
	h.fold(run, event.PlanAccepted, event.PlanAcceptedData{Revision: 1})
}

func (h *history) record(run, scope, key string, st event.TaskStatus) event.Event {
	return h.fold(run, event.MemoryRecorded, event.MemoryRecordedData{Scope: scope, Key: key, Value: "v-" + key,
		Tags: []string{"infra"}, Step: "probe", Attempt: 2, Status: st, From: event.FactFromStdout})
}

func TestRefsLeadToTheWritingEvent(t *testing.T) {
	h := &history{m: memory.New()}
	put := h.fold("", event.MemoryPut, event.MemoryPutData{Scope: "shared", Key: "deploy.region", Value: "eu-west",
		TTL: event.Duration(24 * time.Hour), Tags: []string{"infra", "infra", "bad tag"}})
	h.startRun("run-1", "file", "nightly")
	rec := h.record("run-1", event.FactScopeFamily, "nginx.version", event.TaskSucceeded)

	f, err := h.m.Get("shared", "deploy.region", t0)
	if err != nil {
		t.Fatal(err)
	}
	want := memory.Refs{Event: put.ID, Seq: put.Seq, Type: event.MemoryPut, Node: put.Node}
	if f.Refs != want || strings.Join(f.Tags, ",") != "infra" || !f.ExpiresAt.Equal(put.Time.Add(24*time.Hour)) {
		t.Fatalf("operator fact = %+v; want refs %+v, tags [infra], expiry a day after the put", f, want)
	}
	f, err = h.m.Resolve("family:nightly", "nginx.version", t0)
	if err != nil {
		t.Fatalf("a succeeded step of an operator's plan wrote a fact a plan cannot read: %v", err)
	}
	want = memory.Refs{Event: rec.ID, Seq: rec.Seq, Type: event.MemoryRecorded, Node: rec.Node, Run: "run-1", Step: "probe", Attempt: 2}
	if f.Refs != want || f.Quarantined {
		t.Fatalf("step fact = %+v; want refs %+v, not quarantined", f, want)
	}
}

func TestStepFactsStartQuarantined(t *testing.T) {
	h := &history{m: memory.New()}
	h.startRun("file-run", "file", "")
	h.startRun("llm-run", "llm", "")
	h.startRun("gated-run", "file", "")
	h.fold("gated-run", event.GateDecided, event.GateDecidedData{Step: "probe", Action: event.GateAccept})
	h.startRun("plan-gate-run", "file", "")
	h.fold("plan-gate-run", event.GateDecided, event.GateDecidedData{Action: event.GateAccept}) // a plan's gate overrides no verdict

	h.record("file-run", "", "ok", event.TaskSucceeded)
	h.record("file-run", "", "failed", event.TaskFailed)
	h.record("llm-run", "", "model", event.TaskSucceeded)
	h.record("gated-run", "", "gated", event.TaskSucceeded)
	h.record("plan-gate-run", "", "plangate", event.TaskSucceeded)
	h.record("unknown-run", "", "unknown", event.TaskSucceeded)
	h.record("llm-run", event.FactScopeFamily, "family", event.TaskSucceeded) // inherits the goal's family

	for _, c := range []struct{ scope, key, reason string }{
		{"file-run", "ok", ""},
		{"plan-gate-run", "plangate", ""},
		{"file-run", "failed", memory.ReasonFailedStep},
		{"llm-run", "model", memory.ReasonModel},
		{"gated-run", "gated", memory.ReasonOverridden},
		{"unknown-run", "unknown", memory.ReasonUnknownRun},
		{"family:from-goal", "family", memory.ReasonModel},
	} {
		f, err := h.m.Get(c.scope, c.key, t0)
		if err != nil {
			t.Fatalf("%s/%s: operators must see every fact: %v", c.scope, c.key, err)
		}
		if f.Reason != c.reason || f.Quarantined != (c.reason != "") {
			t.Errorf("%s/%s: quarantined %v (%q), want reason %q", c.scope, c.key, f.Quarantined, f.Reason, c.reason)
		}
		_, err = h.m.Resolve(c.scope, c.key, t0)
		if (c.reason != "") != errors.Is(err, memory.ErrQuarantined) {
			t.Errorf("%s/%s: Resolve = %v", c.scope, c.key, err)
		}
		if c.reason != "" && !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s/%s: Resolve's error %q does not say why", c.scope, c.key, err)
		}
		r := h.m.Search(c.key, t0, memory.SearchOptions{})
		if (r.Total == 0) != (c.reason != "") {
			t.Errorf("%s/%s: search without quarantined found %d", c.scope, c.key, r.Total)
		}
	}
	if p := h.m.Page(memory.ListOptions{Quarantined: true}, t0); len(p.Facts) != 5 {
		t.Errorf("quarantine ls = %d facts, want 5: %+v", len(p.Facts), p.Facts)
	}

	// A release of another version of the fact does nothing; of this one
	// lifts the quarantine; a drop removes the fact.
	f, _ := h.m.Get("llm-run", "model", t0)
	h.fold("", event.MemoryReleased, event.MemoryQuarantineData{Scope: "llm-run", Key: "model", Seq: f.Refs.Seq + 100})
	if _, err := h.m.Resolve("llm-run", "model", t0); !errors.Is(err, memory.ErrQuarantined) {
		t.Fatalf("released by a stale seq: %v", err)
	}
	h.fold("", event.MemoryReleased, event.MemoryQuarantineData{Scope: "llm-run", Key: "model", Seq: f.Refs.Seq})
	if f, err := h.m.Resolve("llm-run", "model", t0); err != nil || f.Released != "node-memory" {
		t.Fatalf("after release: %+v %v", f, err)
	}
	h.fold("", event.MemoryDropped, event.MemoryQuarantineData{Scope: "file-run", Key: "failed"})
	if _, err := h.m.Get("file-run", "failed", t0); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("after drop: %v", err)
	}
	if r := h.m.Search("failed", t0, memory.SearchOptions{Quarantined: true}); r.Total != 0 {
		t.Fatalf("a dropped fact is still in the index: %+v", r)
	}
}

func TestPruneRemovesExpiredFacts(t *testing.T) {
	h := &history{m: memory.New()}
	h.fold("", event.MemoryPut, event.MemoryPutData{Key: "short", Value: "nginx", TTL: event.Duration(time.Minute)})
	h.fold("", event.MemoryPut, event.MemoryPutData{Key: "long", Value: "nginx", TTL: event.Duration(time.Hour)})
	h.fold("", event.MemoryPut, event.MemoryPutData{Key: "forever", Value: "nginx"})
	next, ok := h.m.NextExpiry()
	if !ok || !next.Equal(t0.Add(time.Second+time.Minute)) {
		t.Fatalf("NextExpiry = %v %v", next, ok)
	}
	h.fold("", event.MemoryPruned, event.MemoryPrunedData{Before: t0.Add(10 * time.Minute)})
	// A reader whose clock is behind would still have seen it: pruning,
	// not the clock, removed it.
	if _, err := h.m.Get("", "short", t0); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("short after prune: %v", err)
	}
	for _, k := range []string{"long", "forever"} {
		if _, err := h.m.Get("", k, t0); err != nil {
			t.Fatalf("%s after prune: %v", k, err)
		}
	}
	if r := h.m.Search("nginx", t0, memory.SearchOptions{}); r.Total != 2 {
		t.Fatalf("search after prune: %d hits, want 2", r.Total)
	}
}

// TestValidationStepReleases: a step that names quarantined facts
// releases them when it succeeds, in an operator's plan or approved at a
// gate; a model's step alone, or one that failed, releases nothing.
func TestValidationStepReleases(t *testing.T) {
	h := &history{m: memory.New()}
	h.startRun("file-run", "file", "nightly")
	h.startRun("llm-run", "llm", "")
	h.record("file-run", "", "a", event.TaskFailed)
	h.record("file-run", event.FactScopeFamily, "b", event.TaskFailed)
	h.record("llm-run", "", "c", event.TaskSucceeded)
	h.record("llm-run", "", "d", event.TaskSucceeded)
	validate := func(run, step string, attempt int, approved string, releases []string, st event.TaskStatus) {
		h.fold(run, event.TaskAssigned, event.TaskAssignedData{Step: event.Step{ID: step, Kind: event.KindShell, Run: "true", Releases: releases},
			Attempt: attempt, Node: "n", Approved: approved})
		h.fold(run, event.TaskFinished, event.TaskFinishedData{Step: step, Attempt: attempt, Status: st})
	}
	validate("file-run", "check", 1, "", []string{"run/a", "family/b"}, event.TaskFailed)
	validate("llm-run", "check", 1, "", []string{"run/c"}, event.TaskSucceeded)
	for _, k := range [][2]string{{"file-run", "a"}, {"family:nightly", "b"}, {"llm-run", "c"}} {
		if f, _ := h.m.Get(k[0], k[1], t0); !f.Quarantined {
			t.Errorf("%s/%s released by a failed step or a model's step alone", k[0], k[1])
		}
	}
	validate("file-run", "check", 2, "", []string{"run/a", "family/b"}, event.TaskSucceeded)
	validate("llm-run", "gated", 1, "sha256:subject", []string{"run/d"}, event.TaskSucceeded)
	for _, k := range [][3]string{{"file-run", "a", "check"}, {"family:nightly", "b", "check"}, {"llm-run", "d", "gated"}} {
		f, err := h.m.Resolve(k[0], k[1], t0)
		if err != nil || f.Released != "step "+k[2]+" of run "+strings.TrimPrefix(f.Refs.Run, "") {
			t.Errorf("%s/%s after its validation: %+v %v", k[0], k[1], f, err)
		}
	}
}
