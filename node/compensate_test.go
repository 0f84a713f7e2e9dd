package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// compensatedPlan edits three files in dir (two exist, one is created),
// then creates fillers more files (f1.txt…), runs a shell step that
// declares its own undo (which appends to undo.log), and then fails.
func compensatedPlan(dir string, fillers int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `goal: compensated
steps:
  - id: wa
    kind: file.write
    cwd: %[1]s
    path: a.txt
    content: "new a\n"
  - id: wb
    kind: file.write
    cwd: %[1]s
    path: b.txt
    content: "new b\n"
    depends_on: [wa]
  - id: wc
    kind: file.write
    cwd: %[1]s
    path: c.txt
    content: "new c\n"
    depends_on: [wb]
`, dir)
	last := "wc"
	for i := 1; i <= fillers; i++ {
		fmt.Fprintf(&b, "  - id: f%[1]d\n    kind: file.write\n    cwd: %[2]s\n    path: f%[1]d.txt\n    content: \"f\"\n    depends_on: [%[3]s]\n", i, dir, last)
		last = fmt.Sprintf("f%d", i)
	}
	fmt.Fprintf(&b, `  - id: sh
    run: echo made > made.txt
    compensate: rm made.txt && echo undone >> undo.log
    cwd: %[1]s
    depends_on: [%[2]s]
  - id: boom
    run: exit 3
    depends_on: [sh]
`, dir, last)
	return b.String()
}

// workDir holds the files the plan edits, as they were before the run.
func workDir(t *testing.T) (string, map[string]string) {
	dir := t.TempDir()
	before := map[string]string{"a.txt": "old a\n", "b.txt": "old b\nsecond line\n"}
	for name, content := range before {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dir, before
}

// checkRestored asserts that dir holds exactly the files before lists,
// byte for byte and with their modes, and the undo log of one shell
// compensation.
func checkRestored(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	for name, content := range before {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != content {
			t.Errorf("%s: %q %v, want %q as before the run", name, b, err, content)
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v %v, want 0640", name, fi.Mode(), err)
		}
	}
	gone, _ := filepath.Glob(filepath.Join(dir, "f*.txt"))
	for _, gone := range append([]string{"c.txt", "made.txt"}, gone...) {
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(gone))); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed by compensation", gone, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "undo.log")); err != nil || string(b) != "undone\n" {
		t.Errorf("undo.log %q %v: the shell step's compensate should have run once", b, err)
	}
}

// compensationRecord is what the ledger says of a run's compensations:
// the assignments per compensated attempt and step attempt, and how many
// times each file was put back (a restore that finds a file already
// restored reports it unchanged).
type compensationRecord struct {
	assigned map[string]int // "<step>#<attempt>" of compensation steps
	restored map[string]int // path → restores that changed it
}

func compensations(t *testing.T, n *nodetest.Node, run string) compensationRecord {
	t.Helper()
	rec, err := readCompensations(n, run)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func readCompensations(n *nodetest.Node, run string) (compensationRecord, error) {
	rec := compensationRecord{assigned: map[string]int{}, restored: map[string]int{}}
	restores := map[string]bool{}
	for line, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			return rec, fmt.Errorf("audit of run %s: %w", run, err)
		}
		switch line.Type {
		case string(event.TaskAssigned):
			var d event.TaskAssignedData
			if err := json.Unmarshal(line.Data, &d); err != nil {
				return rec, err
			}
			if d.Compensates != nil {
				rec.assigned[fmt.Sprintf("%s#%d", d.Step.ID, d.Attempt)]++
				if d.Step.Kind == event.KindFileRestore {
					restores[d.Step.ID] = true
				}
			}
		case string(event.TaskFinished):
			var d event.TaskFinishedData
			if err := json.Unmarshal(line.Data, &d); err != nil {
				return rec, err
			}
			if !restores[d.Step] {
				continue
			}
			for _, e := range d.Edits {
				if e.Before != e.After {
					rec.restored[filepath.Base(e.Path)]++
				}
			}
		}
	}
	return rec, nil
}

func checkOnce(t *testing.T, rec compensationRecord) {
	t.Helper()
	for k, n := range rec.assigned {
		if n != 1 {
			t.Errorf("compensation %s assigned %d times", k, n)
		}
	}
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		if rec.restored[name] != 1 {
			t.Errorf("%s restored %d times, want once (%v)", name, rec.restored[name], rec.restored)
		}
	}
}

// TestCompensationRestoresFilesOfAFailedRun: a run whose last step fails
// after three file edits and a shell step with compensate ends failed with
// every file as it was before the run, undone last first, each
// compensation a step the run shows.
func TestCompensationRestoresFilesOfAFailedRun(t *testing.T) {
	dir, before := workDir(t)
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	r := n.WaitRun(t, n.Submit(t, "compensated.yaml", compensatedPlan(dir, 0)), 60*time.Second)
	if r.Status != event.RunFailed {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	if want := "step boom failed: exit status 3; compensated: sh, wc, wb, wa"; r.Reason != want {
		t.Errorf("reason %q, want %q", r.Reason, want)
	}
	checkRestored(t, dir, before)
	var order []string
	for _, s := range r.Steps {
		if strings.HasSuffix(s.ID, ".undo") {
			order = append(order, s.ID)
			if s.Status != string(event.StepSucceeded) {
				t.Errorf("compensation %s: %s (%s)", s.ID, s.Status, s.Error)
			}
		}
	}
	if got := strings.Join(order, " "); got != "sh.undo wc.undo wb.undo wa.undo" {
		t.Errorf("compensation steps shown: %q", got)
	}
	checkOnce(t, compensations(t, n, r.ID))
}

// TestCompensationResumesAfterARestart: the node stops as soon as the
// first restore is done; started again on the same
// data, it finishes the compensation: every file is restored exactly once
// and no compensation is assigned twice for one attempt.
func TestCompensationResumesAfterARestart(t *testing.T) {
	// Filler edits, undone before the three files, keep the compensation
	// going long after the stop is asked for.
	const fillers = 12
	dir, before := workDir(t)
	data := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(data))
	run := n.Submit(t, "compensated.yaml", compensatedPlan(dir, fillers))
	// Watched on the files, which change first (the ledger's index comes
	// after): the shell step ran (made.txt, removed again by its undo), then
	// the first restore (of the last filler) is done.
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	if err := poll.Wait(60*time.Second, func() bool { return exists("made.txt") || exists("undo.log") }); err != nil {
		t.Fatalf("the plan's shell step did not run: %v", err)
	}
	last := fmt.Sprintf("f%d.txt", fillers)
	if err := poll.Wait(60*time.Second, func() bool { return !exists(last) }); err != nil {
		t.Fatalf("no restore done: %v", err)
	}
	n.Stop(t)
	// The stop came in the middle: the first edit is not undone yet.
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "new a\n" {
		t.Fatalf("a.txt after the stop: %q %v, want the edit still in place", b, err)
	}

	n2 := nodetest.Start(t, nodetest.Config(data))
	r := n2.WaitRun(t, run, 60*time.Second)
	if r.Status != event.RunFailed || !strings.HasSuffix(r.Reason, ", wc, wb, wa") {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	checkRestored(t, dir, before)
	rec := compensations(t, n2, run)
	// An interrupted restore is assigned again as its next attempt: each
	// attempt once, and every file put back once.
	checkOnce(t, rec)
	t.Logf("compensation assignments: %v", rec.assigned)
}
