package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// recorded returns the memory.recorded payloads emitted, in order, and
// the position of each step's task.finished among the drafts.
func (r *recorder) recorded() ([]event.MemoryRecordedData, map[string]int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.MemoryRecordedData
	firstFact, finished := map[string]int{}, map[string]int{}
	for i, d := range r.drafts {
		ev := event.Event{Type: d.Type, Data: d.Data}
		switch d.Type {
		case event.MemoryRecorded:
			var f event.MemoryRecordedData
			if ev.Decode(&f) == nil {
				out = append(out, f)
				if _, ok := firstFact[f.Step]; !ok {
					firstFact[f.Step] = i
				}
			}
		case event.TaskFinished:
			var f event.TaskFinishedData
			if ev.Decode(&f) == nil {
				finished[f.Step] = i
			}
		}
	}
	return out, firstFact, finished
}

// TestStepFactsRecorded: a step's facts are read from its standard
// output, a JSON path of it and a file in its working directory, recorded
// before its task.finished with the attempt's status; a path that leaves
// the working directory is refused, and a failed step's facts are
// recorded as failed (the memory fold quarantines them).
func TestStepFactsRecorded(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, nil)
	h.elect(1)
	if err := os.WriteFile(filepath.Join(filepath.Dir(h.work), "outside.txt"), []byte("secret-ish"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(h.work, "link.txt")); err != nil {
		t.Fatal(err)
	}
	publishFacts := func(step, script string, facts []event.FactSpec) {
		d := event.MustDraft(event.TaskAssigned, "run-1", event.TaskAssignedData{
			Decision: event.Decision{Epoch: 1}, Attempt: 1, Node: "exec-1",
			Step: event.Step{ID: step, Kind: event.KindShell, Run: script, Facts: facts},
		})
		d.Target = "exec-1"
		h.publish(d)
	}
	publishFacts("probe", `printf '{"build":{"id":"b-7","n":3}}\n'; echo ' 1.24 ' > version.txt`, []event.FactSpec{
		{Key: "out", From: event.FactFromStdout, Scope: event.FactScopeShared, Tags: []string{"infra"}},
		{Key: "build.id", From: event.FactFromJSON, Path: "build.id"},
		{Key: "build.n", From: event.FactFromJSON, Path: "build.n"},
		{Key: "version", From: event.FactFromFile, Path: "version.txt", TTL: event.Duration(time.Hour)},
		{Key: "escape", From: event.FactFromFile, Path: "../outside.txt"},
		{Key: "link", From: event.FactFromFile, Path: "link.txt"},
		{Key: "missing", From: event.FactFromJSON, Path: "build.nope"},
	})
	publishFacts("broken", "echo half; exit 3", []event.FactSpec{{Key: "partial", From: event.FactFromStdout}})
	if err := poll.Wait(20*time.Second, func() bool { return len(rec.finished("probe")) == 1 && len(rec.finished("broken")) == 1 }); err != nil {
		t.Fatal("the steps did not finish")
	}
	facts, firstFact, finished := rec.recorded()
	got := map[string]event.MemoryRecordedData{}
	for _, f := range facts {
		got[f.Key] = f
	}
	want := map[string]string{"out": `{"build":{"id":"b-7","n":3}}`, "build.id": "b-7", "build.n": "3", "version": "1.24", "partial": "half"}
	if len(got) != len(want) {
		t.Fatalf("recorded %d facts, want %d: %+v", len(got), len(want), facts)
	}
	for k, v := range want {
		if got[k].Value != v {
			t.Errorf("fact %s = %q, want %q", k, got[k].Value, v)
		}
	}
	if f := got["out"]; f.Scope != event.FactScopeShared || strings.Join(f.Tags, ",") != "infra" || f.Step != "probe" || f.Attempt != 1 || f.Status != event.TaskSucceeded || f.From != "stdout" {
		t.Errorf("out = %+v", f)
	}
	if f := got["version"]; f.TTL != event.Duration(time.Hour) {
		t.Errorf("version ttl = %v", f.TTL)
	}
	if f := got["partial"]; f.Status != event.TaskFailed {
		t.Errorf("a failed step's fact has status %q", f.Status)
	}
	for _, step := range []string{"probe", "broken"} {
		if firstFact[step] > finished[step] {
			t.Errorf("step %s: facts recorded after its task.finished", step)
		}
	}
}
