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

// assignStep publishes a task.assigned of step (attempt) to node,
// compensating c when c is set.
func (h *harness) assignStep(node, run string, s event.Step, attempt int, c *event.Compensation) {
	h.t.Helper()
	d := event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{
		Decision: event.Decision{Epoch: 1}, Attempt: attempt, Node: node, Step: s, Compensates: c,
	})
	d.Target = node
	h.publish(d)
}

// waitFinished waits for the n-th task.finished of step and returns it.
func waitFinished(t *testing.T, rec *recorder, step string, n int) event.TaskFinishedData {
	t.Helper()
	poll.Eventually(t, 10*time.Second, step+" finished", func() bool { return len(rec.finished(step)) >= n })
	return rec.finished(step)[n-1]
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Three file edits run as steps report their before-images; restored in
// reverse by file.restore steps (the orchestrator's compensation), they
// leave the files as they were. A restore run again — as after a crash
// during the compensation, with the same local state — changes nothing.
func TestFileEditStepsCompensated(t *testing.T) {
	h := newHarness(t)
	state := filepath.Join(t.TempDir(), "executor")
	rec := &recorder{}
	ex := h.start("n1", state, rec, nil)
	h.elect(1)

	conf := filepath.Join(h.work, "app.conf")
	if err := os.WriteFile(conf, []byte("port = 80\nhost = a\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	steps := []event.Step{
		{ID: "write", Kind: event.KindFileWrite, Path: "app.conf", Content: "port = 8080\nhost = a\n"},
		{ID: "patch", Kind: event.KindFilePatch, Patch: "--- a/app.conf\n+++ b/app.conf\n@@ -1,2 +1,2 @@\n port = 8080\n-host = a\n+host = b\n"},
		{ID: "create", Kind: event.KindFileWrite, Path: "new.txt", Content: "hello\n", Mode: "0600"},
	}
	var done []event.TaskFinishedData
	for _, s := range steps {
		h.assignStep("n1", "r1", s, 1, nil)
		f := waitFinished(t, rec, s.ID, 1)
		if f.Status != event.TaskSucceeded || len(f.Edits) != 1 || !rec.started(s.ID) {
			t.Fatalf("%s: %+v", s.ID, f)
		}
		done = append(done, f)
	}
	if !strings.Contains(done[1].OutputTail, "-host = a\n+host = b\n") || done[1].Cwd != h.work {
		t.Fatalf("patch report: tail %q cwd %q", done[1].OutputTail, done[1].Cwd)
	}
	if readFile(t, conf) != "port = 8080\nhost = b\n" || readFile(t, filepath.Join(h.work, "new.txt")) != "hello\n" {
		t.Fatal("edits not applied")
	}
	if _, err := os.Stat(EditsDir(state)); err != nil {
		t.Fatalf("before-image store: %v", err)
	}

	// Compensation, last edit first.
	for i := len(done) - 1; i >= 0; i-- {
		id := "undo-" + done[i].Step
		h.assignStep("n1", "r1", event.Step{ID: id, Kind: event.KindFileRestore, Idempotent: true}, 1,
			&event.Compensation{Step: done[i].Step, Attempt: 1, Edits: done[i].Edits})
		if f := waitFinished(t, rec, id, 1); f.Status != event.TaskSucceeded || f.OutputTail == "" {
			t.Fatalf("%s: %+v", id, f)
		}
	}
	if readFile(t, conf) != "port = 80\nhost = a\n" {
		t.Fatalf("app.conf after compensation: %q", readFile(t, conf))
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("app.conf mode: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(h.work, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt still there: %v", err)
	}

	// The executor restarts (same local state); the leader runs the last
	// compensation again as attempt 2: nothing is undone twice.
	if err := h.stop(ex, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	rec2 := &recorder{}
	h.start("n1", state, rec2, nil)
	h.assignStep("n1", "r1", event.Step{ID: "undo-write", Kind: event.KindFileRestore, Idempotent: true}, 2,
		&event.Compensation{Step: "write", Attempt: 1, Edits: done[0].Edits})
	f := waitFinished(t, rec2, "undo-write", 1)
	if f.Status != event.TaskSucceeded || !strings.HasPrefix(f.OutputTail, "no change") {
		t.Fatalf("restore again: %+v", f)
	}
	if readFile(t, conf) != "port = 80\nhost = a\n" {
		t.Fatal("app.conf changed by the second restore")
	}
}

// An edit the executor refuses fails with class logic, says why, and
// changes nothing; so does a file.restore without edits.
func TestFileEditStepRefused(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("n1", filepath.Join(t.TempDir(), "executor"), rec, nil)
	h.elect(1)
	h.assignStep("n1", "r1", event.Step{ID: "escape", Kind: event.KindFileWrite, Path: "../escape.txt", Content: "x"}, 1, nil)
	h.assignStep("n1", "r1", event.Step{ID: "badpatch", Kind: event.KindFilePatch, Patch: "not a diff"}, 1, nil)
	h.assignStep("n1", "r1", event.Step{ID: "norestore", Kind: event.KindFileRestore}, 1, nil)
	for step, want := range map[string]string{"escape": "leaves the working directory", "badpatch": "names no file", "norestore": "without the edits"} {
		f := waitFinished(t, rec, step, 1)
		if f.Status != event.TaskFailed || f.Class != event.ClassLogic || !strings.Contains(f.Error, want) {
			t.Errorf("%s: %+v, want failed, logic, %q", step, f, want)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(h.work), "escape.txt")); err == nil {
		t.Fatal("escape.txt written outside the working directory")
	}
}
