package executor

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/fileedit"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
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

// threeEdits runs a file.write, a file.patch and a file.write creating a
// file on ex (node n1, run r1) over app.conf in h.work, and returns their
// task.finished.
func threeEdits(t *testing.T, h *harness, rec *recorder) []event.TaskFinishedData {
	t.Helper()
	conf := filepath.Join(h.work, "app.conf")
	if err := os.WriteFile(conf, []byte("port = 80\nhost = a\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(conf, 0o640); err != nil {
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
	return done
}

// asBefore checks the files threeEdits changed are as they were.
func asBefore(t *testing.T, h *harness) {
	t.Helper()
	conf := filepath.Join(h.work, "app.conf")
	if readFile(t, conf) != "port = 80\nhost = a\n" {
		t.Fatalf("app.conf after compensation: %q", readFile(t, conf))
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("app.conf mode: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(h.work, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt still there: %v", err)
	}
}

// undo assigns the compensation of f (attempt) and waits for its n-th
// task.finished.
func undo(t *testing.T, h *harness, rec *recorder, f event.TaskFinishedData, attempt, n int) event.TaskFinishedData {
	t.Helper()
	id := "undo-" + f.Step
	h.assignStep("n1", "r1", event.Step{ID: id, Kind: event.KindFileRestore, Idempotent: true}, attempt,
		&event.Compensation{Step: f.Step, Attempt: f.Attempt, Edits: f.Edits})
	return waitFinished(t, rec, id, n)
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
	done := threeEdits(t, h, rec)
	if _, err := os.Stat(EditsDir(state)); err != nil {
		t.Fatalf("before-image store: %v", err)
	}

	// Compensation, last edit first.
	for i := len(done) - 1; i >= 0; i-- {
		if f := undo(t, h, rec, done[i], 1, 1); f.Status != event.TaskSucceeded || f.OutputTail == "" || len(f.Edits) != 1 {
			t.Fatalf("undo %s: %+v", done[i].Step, f)
		}
	}
	asBefore(t, h)
	conf := filepath.Join(h.work, "app.conf")

	// The executor restarts (same local state); the leader runs the last
	// compensation again as attempt 2: nothing is undone twice.
	if err := h.stop(ex, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	rec2 := &recorder{}
	h.start("n1", state, rec2, nil)
	f := undo(t, h, rec2, done[0], 2, 1)
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
	for step, want := range map[string]string{"escape": "leaves the working directory", "badpatch": "names no file", "norestore": "without the step"} {
		f := waitFinished(t, rec, step, 1)
		if f.Status != event.TaskFailed || f.Class != event.ClassLogic || !strings.Contains(f.Error, want) {
			t.Errorf("%s: %+v, want failed, logic, %q", step, f, want)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(h.work), "escape.txt")); err == nil {
		t.Fatal("escape.txt written outside the working directory")
	}
}

// The executor crashes during the compensation: the restore of the last
// edit has put its file back, but its attempt is recorded started and not
// finished. At restart it is reported interrupted; the leader assigns it
// again (it is idempotent), it finds the file restored and changes
// nothing, and the other compensations leave every file as it was.
func TestCompensationResumesAfterCrash(t *testing.T) {
	h := newHarness(t)
	state := filepath.Join(t.TempDir(), "executor")
	rec := &recorder{}
	ex := h.start("n1", state, rec, nil)
	h.elect(1)
	done := threeEdits(t, h, rec)
	if err := h.stop(ex, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// What the crashed attempt did before dying.
	last := done[2]
	st, err := localstate.Open(state, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkStarted(localstate.Attempt{Run: "r1", Step: "undo-" + last.Step, Attempt: 1, State: localstate.StateStarted, Started: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	edits, err := fileedit.Open(EditsDir(state))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := edits.Restore(EditKey("r1", last.Step), last.Edits, fileedit.Options{}); err != nil {
		t.Fatal(err)
	}

	rec2 := &recorder{}
	h.start("n1", state, rec2, nil)
	if f := waitFinished(t, rec2, "undo-"+last.Step, 1); !f.Interrupted || f.Attempt != 1 {
		t.Fatalf("crashed restore reported as %+v, want interrupted", f)
	}
	// A redelivery of attempt 1 is not run again (its record stands).
	h.assignStep("n1", "r1", event.Step{ID: "undo-" + last.Step, Kind: event.KindFileRestore, Idempotent: true}, 1,
		&event.Compensation{Step: last.Step, Attempt: last.Attempt, Edits: last.Edits})
	if f := undo(t, h, rec2, last, 2, 2); f.Status != event.TaskSucceeded || f.Attempt != 2 || !strings.HasPrefix(f.OutputTail, "no change") {
		t.Fatalf("restore again: %+v", f)
	}
	for i := len(done) - 2; i >= 0; i-- {
		if f := undo(t, h, rec2, done[i], 1, 1); f.Status != event.TaskSucceeded || !strings.Contains(f.OutputTail, "@@") {
			t.Fatalf("undo %s: %+v", done[i].Step, f)
		}
	}
	asBefore(t, h)
	if n := len(rec2.finished("undo-" + last.Step)); n != 2 {
		t.Fatalf("undo-%s reported %d times, want 2 (interrupted, then attempt 2)", last.Step, n)
	}
}

// An edit whose attempt was interrupted before it reported its edits is
// compensated from what the executor recorded: file.restore without
// edits restores the step's recorded edit, and one for a step it never
// edited changes nothing.
func TestCompensateInterruptedEdit(t *testing.T) {
	h := newHarness(t)
	state := filepath.Join(t.TempDir(), "executor")
	rec := &recorder{}
	h.start("n1", state, rec, nil)
	h.elect(1)
	for name, content := range map[string]string{"a.txt": "a\n", "b.txt": "b\n"} {
		if err := os.WriteFile(filepath.Join(h.work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What the interrupted attempt did: the whole patch applied, nothing
	// reported.
	st, err := fileedit.Open(EditsDir(state))
	if err != nil {
		t.Fatal(err)
	}
	patch := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n"
	if _, err := st.Apply(fileedit.Edit{Key: EditKey("r1", "p"), Kind: event.KindFilePatch, Dir: h.work, Patch: patch}, fileedit.Options{}); err != nil {
		t.Fatal(err)
	}
	undo(t, h, rec, event.TaskFinishedData{Step: "p", Attempt: 1}, 1, 1)
	f := rec.finished("undo-p")[0]
	if f.Status != event.TaskSucceeded || len(f.Edits) != 2 {
		t.Fatalf("undo-p: %+v", f)
	}
	if readFile(t, filepath.Join(h.work, "a.txt")) != "a\n" || readFile(t, filepath.Join(h.work, "b.txt")) != "b\n" {
		t.Fatal("interrupted patch not undone")
	}
	if f := undo(t, h, rec, event.TaskFinishedData{Step: "never", Attempt: 1}, 1, 1); f.Status != event.TaskSucceeded || !strings.HasPrefix(f.OutputTail, "no change") {
		t.Fatalf("undo of a step never edited: %+v", f)
	}
}

func TestChunksAndClip(t *testing.T) {
	s := strings.Repeat("0123456789\n", 10)
	cs := chunks(s, 25)
	if strings.Join(cs, "") != s {
		t.Fatal("chunks lose bytes")
	}
	for _, c := range cs {
		if len(c) > 25 || !strings.HasSuffix(c, "\n") {
			t.Fatalf("chunk %q", c)
		}
	}
	if got := chunks(strings.Repeat("x", 60), 25); len(got) != 3 || len(got[0]) != 25 {
		t.Fatalf("chunks of a long line: %q", got)
	}
	if c := clip(s, 30); c != s[:22]+"[diff cut: 88 more bytes]\n" {
		t.Fatalf("clip: %q", c)
	}
	if clip("short\n", 30) != "short\n" {
		t.Fatal("clip of a short diff changed it")
	}
}
