package gitwork_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/gitwork"
)

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestEndedRunsArePruned: a url run whose branch was pushed leaves no
// clone behind when it ends, and its state file goes with the sweep once
// it ended longer ago than EndedKeep; a discarded url run leaves no clone
// either; a clone another live run uses stays. The sweep at start also
// removes the temporary files of interrupted saves and clones no run
// names, and looks at no more entries than it is given.
func TestEndedRunsArePruned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spec := event.GitSpec{URL: "file://" + f.remote, Base: "main", Push: "origin"}
	st, err := f.w.Create(ctx, "r1", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	clone := st.Repo
	if _, err := f.w.Create(ctx, "r2", spec, nil); err != nil { // a second run on the same clone
		t.Fatal(err)
	}
	if _, err := f.w.Finish(ctx, "r1", spec, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.w.End(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if !exists(clone) {
		t.Fatal("the clone r2 still uses was pruned")
	}
	if err := f.w.Discard(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if exists(clone) {
		t.Fatal("the clone outlived its runs (r1 pushed and ended, r2 discarded)")
	}
	state := filepath.Join(f.dir, "state")
	if !exists(filepath.Join(state, "r1.json")) {
		t.Fatal("the ended run's state went at once: a git.finish attempted again would not find it")
	}
	// The sweep at start, an interrupted save and an orphan clone left.
	if err := os.WriteFile(filepath.Join(state, "r9.123.tmp"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(f.dir, "work", "clones", "0000000000000000.git")
	if err := os.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	if n, err := f.w.Sweep(ctx, time.Now(), 100); err != nil || exists(filepath.Join(state, "r9.123.tmp")) || exists(orphan) || n != 2 {
		t.Fatalf("sweep now: %d removed, %v; tmp left %v, orphan left %v", n, err, exists(filepath.Join(state, "r9.123.tmp")), exists(orphan))
	}
	if !exists(filepath.Join(state, "r1.json")) {
		t.Fatal("the sweep removed a run that ended less than EndedKeep ago")
	}
	if n, err := f.w.Sweep(ctx, time.Now().Add(gitwork.EndedKeep+time.Minute), 1); err != nil || n != 1 || exists(filepath.Join(state, "r1.json")) {
		t.Fatalf("sweep after EndedKeep: %d removed, %v; state left %v", n, err, exists(filepath.Join(state, "r1.json")))
	}
}
