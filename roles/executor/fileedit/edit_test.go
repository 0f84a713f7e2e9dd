package fileedit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// fixture is a working directory and a store, both in t.TempDir().
type fixture struct {
	t   *testing.T
	dir string
	st  *Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := Open(filepath.Join(root, "data", "executor-edits"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, dir: dir, st: st}
}

func (f *fixture) path(name string) string { return filepath.Join(f.dir, name) }

func (f *fixture) write(name, content string, mode os.FileMode) {
	f.t.Helper()
	if err := os.WriteFile(f.path(name), []byte(content), mode); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(f.path(name), mode); err != nil { // umask
		f.t.Fatal(err)
	}
}

func (f *fixture) read(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(f.path(name))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) mode(name string) os.FileMode {
	f.t.Helper()
	fi, err := os.Stat(f.path(name))
	if err != nil {
		f.t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func (f *fixture) absent(name string) {
	f.t.Helper()
	if _, err := os.Lstat(f.path(name)); !errors.Is(err, os.ErrNotExist) {
		f.t.Fatalf("%s exists (err %v), want it absent", name, err)
	}
}

func (f *fixture) apply(e Edit) Result {
	f.t.Helper()
	e.Dir = f.dir
	r, err := f.st.Apply(e, Options{})
	if err != nil {
		f.t.Fatalf("apply %s: %v", e.Key, err)
	}
	return r
}

func (f *fixture) restore(key string, edits []event.FileEdit) Result {
	f.t.Helper()
	r, err := f.st.Restore(key, edits, Options{})
	if err != nil {
		f.t.Fatalf("restore: %v", err)
	}
	return r
}

// noTemp checks no temporary file was left in the working directory.
func (f *fixture) noTemp() {
	f.t.Helper()
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".agentic-edit-") {
			f.t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteNewFileThenRestoreRemovesIt(t *testing.T) {
	f := newFixture(t)
	r := f.apply(Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "app.conf", Content: "port = 80\n", Mode: "0600"})
	if got := f.read("app.conf"); got != "port = 80\n" {
		t.Fatalf("content %q", got)
	}
	if m := f.mode("app.conf"); m != 0o600 {
		t.Fatalf("mode %o, want 600", m)
	}
	if !r.Changed || len(r.Edits) != 1 {
		t.Fatalf("result %+v", r)
	}
	fe := r.Edits[0]
	if fe.Path != f.path("app.conf") || fe.Before != event.FileAbsent || fe.After != Hash([]byte("port = 80\n")) || fe.Mode != "" {
		t.Fatalf("edit %+v", fe)
	}
	want := "--- /dev/null\n+++ b/app.conf\n@@ -0,0 +1,1 @@\n+port = 80\n"
	if r.Diff != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", r.Diff, want)
	}
	f.noTemp()

	rr := f.restore("run/w", r.Edits)
	f.absent("app.conf")
	if !rr.Changed || rr.Edits[0].Before != fe.After || rr.Edits[0].After != event.FileAbsent {
		t.Fatalf("restore result %+v", rr)
	}
	if !strings.Contains(rr.Diff, "+++ /dev/null") || !strings.Contains(rr.Diff, "-port = 80") {
		t.Fatalf("restore diff:\n%s", rr.Diff)
	}
	// Restoring again changes nothing and is no error.
	if again := f.restore("run/w", r.Edits); again.Changed || again.Diff != "" {
		t.Fatalf("second restore changed something: %+v", again)
	}
	f.absent("app.conf")
}

func TestWriteExistingKeepsModeAndRestoresContent(t *testing.T) {
	f := newFixture(t)
	f.write("run.sh", "#!/bin/sh\necho old\n", 0o750)
	r := f.apply(Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "run.sh", Content: "#!/bin/sh\necho new\n", Mode: "0600"})
	if got := f.mode("run.sh"); got != 0o750 {
		t.Fatalf("mode %o: an existing file keeps its own (750)", got)
	}
	if r.Edits[0].Mode != "0750" || r.Edits[0].Before != Hash([]byte("#!/bin/sh\necho old\n")) {
		t.Fatalf("edit %+v", r.Edits[0])
	}
	if !strings.Contains(r.Diff, "-echo old\n+echo new\n") {
		t.Fatalf("diff:\n%s", r.Diff)
	}
	f.restore("run/w", r.Edits)
	if got := f.read("run.sh"); got != "#!/bin/sh\necho old\n" {
		t.Fatalf("restored %q", got)
	}
	if got := f.mode("run.sh"); got != 0o750 {
		t.Fatalf("restored mode %o", got)
	}
}

func TestApplyTwiceIsNoop(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\n", 0o644)
	e := Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "a.txt", Content: "two\n"}
	first := f.apply(e)
	fi1, _ := os.Stat(f.path("a.txt"))
	second := f.apply(e)
	fi2, _ := os.Stat(f.path("a.txt"))
	if second.Changed || second.Diff != "" {
		t.Fatalf("second apply changed something: %+v", second)
	}
	if !os.SameFile(fi1, fi2) {
		t.Fatal("second apply replaced the file")
	}
	// The second application reports the first one's before-image, so a
	// compensation after a re-run still goes back to "one".
	if second.Edits[0] != first.Edits[0] {
		t.Fatalf("edits differ: first %+v, second %+v", first.Edits[0], second.Edits[0])
	}
	f.restore("run/w", second.Edits)
	if got := f.read("a.txt"); got != "one\n" {
		t.Fatalf("restored %q", got)
	}

	// A patch applied twice: the second finds the result (its hunks would
	// no longer apply) and does nothing.
	f.write("b.txt", "x\ny\nz\n", 0o644)
	p := Edit{Key: "run/p", Kind: event.KindFilePatch, Patch: "--- a/b.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n z\n"}
	pf := f.apply(p)
	ps := f.apply(p)
	if ps.Changed || ps.Edits[0] != pf.Edits[0] || f.read("b.txt") != "x\nY\nz\n" {
		t.Fatalf("second patch: %+v, file %q", ps, f.read("b.txt"))
	}
}

// A crash after the edit was recorded but before the file was written:
// the new attempt applies it, with the same before-image.
func TestApplyAfterCrashBeforeWrite(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\n", 0o644)
	e := Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "a.txt", Content: "two\n", Dir: f.dir}
	// What Apply records before it writes.
	cs, err := plan(e, Options{}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	r := result(cs)
	if _, err := f.st.putBlob(cs[0].cur.content); err != nil {
		t.Fatal(err)
	}
	if err := f.st.putJournal(journal{Key: e.Key, Spec: e.spec(), Edits: r.Edits}); err != nil {
		t.Fatal(err)
	}
	got := f.apply(e)
	if !got.Changed || got.Edits[0] != r.Edits[0] || f.read("a.txt") != "two\n" {
		t.Fatalf("apply after crash: %+v, file %q", got, f.read("a.txt"))
	}
}

// An edit changed between attempts (an operator edited it at its gate)
// keeps the before-image of the first application.
func TestChangedEditKeepsFirstBeforeImage(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\n", 0o644)
	f.apply(Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "a.txt", Content: "two\n"})
	r := f.apply(Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "a.txt", Content: "three\n"})
	if r.Edits[0].Before != Hash([]byte("one\n")) || f.read("a.txt") != "three\n" {
		t.Fatalf("edit %+v, file %q", r.Edits[0], f.read("a.txt"))
	}
	f.restore("run/w", r.Edits)
	if got := f.read("a.txt"); got != "one\n" {
		t.Fatalf("restored %q", got)
	}
}

// The must-hold: three completed edits, restored in reverse,
// leave the files byte-identical — a created file removed, a mode kept —
// and a restore interrupted part-way resumes without undoing anything
// twice.
func TestThreeEditsRestoredInReverse(t *testing.T) {
	f := newFixture(t)
	orig := "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n"
	f.write("config.ini", orig, 0o640)
	f.write("notes.txt", "keep me\nno newline at end", 0o600)
	before := snapshot(t, f.dir)

	e1 := f.apply(Edit{Key: "run/e1", Kind: event.KindFileWrite, Path: "config.ini", Content: "replaced\n" + orig})
	e2 := f.apply(Edit{Key: "run/e2", Kind: event.KindFilePatch, Patch: "" +
		"diff --git a/config.ini b/config.ini\n--- a/config.ini\n+++ b/config.ini\n@@ -4,3 +4,3 @@ line 2\n line 3\n-line 4\n+LINE FOUR\n line 5\n" +
		"diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n keep me\n-no newline at end\n\\ No newline at end of file\n+now with one\n"})
	e3 := f.apply(Edit{Key: "run/e3", Kind: event.KindFileWrite, Path: "created.txt", Content: "new\n", Mode: "0755"})
	if f.read("config.ini") != "replaced\nline 1\nline 2\nline 3\nLINE FOUR\nline 5\nline 6\nline 7\nline 8\n" {
		t.Fatalf("config.ini after the edits: %q", f.read("config.ini"))
	}
	if len(e2.Edits) != 2 || f.read("notes.txt") != "keep me\nnow with one\n" {
		t.Fatalf("patch edits %+v, notes %q", e2.Edits, f.read("notes.txt"))
	}

	// Restore out of order is refused and changes nothing: config.ini
	// holds e2's result, not e1's.
	if _, err := f.st.Restore("run/e1", e1.Edits, Options{}); !errors.Is(err, ErrConflict) {
		t.Fatalf("restore out of order: %v, want ErrConflict", err)
	}

	f.restore("run/e3", e3.Edits)
	// A crash here; the compensation resumes from the last edit again:
	// e3's restore is done already and changes nothing.
	if again := f.restore("run/e3", e3.Edits); again.Changed {
		t.Fatalf("e3 restored twice: %+v", again)
	}
	r2 := f.restore("run/e2", e2.Edits)
	if !r2.Changed || len(r2.Edits) != 2 || r2.Edits[0].Path != f.path("notes.txt") {
		t.Fatalf("e2 restore (last file first): %+v", r2.Edits)
	}
	f.restore("run/e1", e1.Edits)
	if again := f.restore("run/e1", e1.Edits); again.Changed {
		t.Fatal("e1 restored twice")
	}
	if after := snapshot(t, f.dir); !equalSnapshots(before, after) {
		t.Fatalf("files differ after restore:\nbefore %v\nafter  %v", before, after)
	}
}

type fileSnap struct {
	content string
	mode    os.FileMode
}

func snapshot(t *testing.T, dir string) map[string]fileSnap {
	t.Helper()
	out := map[string]fileSnap{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fileSnap{string(b), fi.Mode()}
	}
	return out
}

func equalSnapshots(a, b map[string]fileSnap) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestRestoreRefusesLaterChange(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\n", 0o644)
	r := f.apply(Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "a.txt", Content: "two\n"})
	f.write("a.txt", "someone else's\n", 0o644)
	_, err := f.st.Restore("run/w", r.Edits, Options{})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), f.path("a.txt")) {
		t.Fatalf("err %v: want ErrConflict naming the file", err)
	}
	if got := f.read("a.txt"); got != "someone else's\n" {
		t.Fatalf("file overwritten: %q", got)
	}
}

func TestRestoreNeedsItsBeforeImage(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "two\n", 0o644)
	other, err := Open(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	edits := []event.FileEdit{{Path: f.path("a.txt"), Before: Hash([]byte("one\n")), After: Hash([]byte("two\n")), Mode: "0644"}}
	if _, err := other.Restore("run/w", edits, Options{}); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("restore of an edit the store did not make: %v", err)
	}
	// Recorded, but its before-image lost from the store.
	f.write("a.txt", "one\n", 0o644)
	r := f.apply(Edit{Key: "run/w", Kind: event.KindFileWrite, Path: "a.txt", Content: "two\n"})
	p, _ := f.st.blobPath(r.Edits[0].Before)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Restore("run/w", r.Edits, Options{}); err == nil || !strings.Contains(err.Error(), "not in the store") {
		t.Fatalf("err %v", err)
	}
	// A forged edit naming a file the store did not edit (deleting it
	// would need only its hash) is refused and the file stays.
	f.write("victim.txt", "v\n", 0o644)
	forged := []event.FileEdit{{Path: f.path("victim.txt"), Before: event.FileAbsent, After: Hash([]byte("v\n"))}}
	if _, err := f.st.Restore("run/w", forged, Options{}); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("forged restore: %v", err)
	}
	if f.read("victim.txt") != "v\n" {
		t.Fatal("victim.txt touched")
	}
	for _, bad := range [][]event.FileEdit{
		nil,
		{{Path: "a.txt", Before: event.FileAbsent, After: Hash(nil)}},
		{{Path: f.path("a.txt"), Before: "md5:00", After: Hash(nil)}},
	} {
		if _, err := f.st.Restore("run/w", bad, Options{}); err == nil {
			t.Errorf("restore %+v: no error", bad)
		}
	}
}

func TestPatchCreatesAndDeletes(t *testing.T) {
	f := newFixture(t)
	f.write("old.txt", "bye\n", 0o600)
	r := f.apply(Edit{Key: "run/p", Kind: event.KindFilePatch, Patch: "" +
		"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n" +
		"--- a/old.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n"})
	if f.read("new.txt") != "hello\nworld\n" {
		t.Fatalf("new.txt %q", f.read("new.txt"))
	}
	f.absent("old.txt")
	if r.Edits[1].After != event.FileAbsent || r.Edits[0].Before != event.FileAbsent {
		t.Fatalf("edits %+v", r.Edits)
	}
	f.restore("run/p", r.Edits)
	f.absent("new.txt")
	if f.read("old.txt") != "bye\n" || f.mode("old.txt") != 0o600 {
		t.Fatalf("old.txt %q %o", f.read("old.txt"), f.mode("old.txt"))
	}
}

func TestMalformedPatchRefused(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "x\ny\n", 0o644)
	for _, c := range []struct{ name, patch, want string }{
		{"empty", "  \n", "patch is empty"},
		{"not a diff", "please change a.txt\n", "names no file"},
		{"bad hunk header", "--- a/a.txt\n+++ b/a.txt\n@@ -1,x +1 @@\n-x\n+X\n", "does not parse"},
		{"hunk count wrong", "--- a/a.txt\n+++ b/a.txt\n@@ -1,5 +1,5 @@\n-x\n+X\n", "does not parse"},
		{"rename", "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n", "renames"},
		{"twice", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+X\n--- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-y\n+Y\n", "twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.st.Apply(Edit{Key: "run/" + c.name, Kind: event.KindFilePatch, Dir: f.dir, Patch: c.patch}, Options{})
			if !errors.Is(err, ErrBadPatch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v: want ErrBadPatch saying %q", err, c.want)
			}
		})
	}
	// Parses, but its context does not match: nothing changes, the error
	// names the file.
	_, err := f.st.Apply(Edit{Key: "run/ctx", Kind: event.KindFilePatch, Dir: f.dir, Patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n x\n-q\n+Q\n"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "does not apply to a.txt") {
		t.Fatalf("err %v", err)
	}
	if f.read("a.txt") != "x\ny\n" {
		t.Fatal("file changed by a patch that does not apply")
	}
}

// A patch whose second file does not apply changes neither.
func TestPatchAllOrNothing(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "a\n", 0o644)
	f.write("b.txt", "b\n", 0o644)
	_, err := f.st.Apply(Edit{Key: "run/p", Kind: event.KindFilePatch, Dir: f.dir, Patch: "" +
		"--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-nope\n+B\n"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "b.txt") {
		t.Fatalf("err %v", err)
	}
	if f.read("a.txt") != "a\n" {
		t.Fatal("a.txt changed although b.txt's hunk failed")
	}
}

func TestPathSafety(t *testing.T) {
	f := newFixture(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, f.path("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), f.path("filelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"dotdot", "../escape.txt", "leaves the working directory"},
		{"dotdot inside", "sub/../../escape.txt", "leaves the working directory"},
		{"dir symlink", "link/secret", "through a symlink"},
		{"file symlink", "filelink", "is a symlink"},
		{"directory", "sub", "not a regular file"},
		{"dot", ".", "names a directory"},
		{"absolute outside", filepath.Join(outside, "secret"), "not allowed"},
		{"missing dir", "nodir/x.txt", "does not exist"},
		{"empty", "", "no path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := Edit{Key: "run/" + c.name, Kind: event.KindFileWrite, Dir: f.dir, Path: c.path, Content: "pwned\n"}
			_, err := f.st.Apply(e, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v: want %q", err, c.want)
			}
			if _, err := DryRun(e, Options{}); err == nil {
				t.Fatal("dry run accepted it")
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s\n" {
		t.Fatalf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(f.dir), "escape.txt")); err == nil {
		t.Fatal("escape.txt written outside")
	}
	// A patch naming a file outside is refused the same way.
	_, err := f.st.Apply(Edit{Key: "run/pp", Kind: event.KindFilePatch, Dir: f.dir,
		Patch: "--- a/link/secret\n+++ b/link/secret\n@@ -1 +1 @@\n-s\n+p\n"}, Options{})
	if !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("patch through a symlink: %v", err)
	}
	// An absolute path the options allow is written.
	allow := func(p string) bool { return strings.HasPrefix(p, outside+string(filepath.Separator)) }
	r, err := f.st.Apply(Edit{Key: "run/abs", Kind: event.KindFileWrite, Dir: f.dir, Path: filepath.Join(outside, "secret"), Content: "ok\n"}, Options{AllowAbsolute: allow})
	if err != nil || !strings.Contains(r.Diff, "+ok") {
		t.Fatalf("allowed absolute write: %v %+v", err, r)
	}
	// A path inside the working directory given absolutely needs no allowance.
	if _, err := f.st.Apply(Edit{Key: "run/abs-in", Kind: event.KindFileWrite, Dir: f.dir, Path: f.path("in.txt"), Content: "in\n"}, Options{}); err != nil {
		t.Fatalf("absolute path inside: %v", err)
	}
}

func TestNonRegularFileRefused(t *testing.T) {
	f := newFixture(t)
	if err := mkfifo(f.path("pipe")); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	_, err := f.st.Apply(Edit{Key: "run/fifo", Kind: event.KindFileWrite, Dir: f.dir, Path: "pipe", Content: "x"}, Options{})
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("err %v", err)
	}
}

func TestLimits(t *testing.T) {
	f := newFixture(t)
	f.write("big.txt", strings.Repeat("x", 100), 0o644)
	o := Options{MaxFileBytes: 10}
	if _, err := f.st.Apply(Edit{Key: "run/big", Kind: event.KindFileWrite, Dir: f.dir, Path: "small.txt", Content: strings.Repeat("y", 11)}, o); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("content over the limit: %v", err)
	}
	if _, err := f.st.Apply(Edit{Key: "run/big2", Kind: event.KindFileWrite, Dir: f.dir, Path: "big.txt", Content: "y"}, o); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("file over the limit: %v", err)
	}
	for _, m := range []string{"999", "rw", "01777", "-1"} {
		if _, err := f.st.Apply(Edit{Key: "run/m", Kind: event.KindFileWrite, Dir: f.dir, Path: "m.txt", Content: "y", Mode: m}, Options{}); err == nil || !strings.Contains(err.Error(), "mode") {
			t.Errorf("mode %q: %v", m, err)
		}
	}
	if _, err := f.st.Apply(Edit{Key: "", Kind: event.KindFileWrite, Dir: f.dir, Path: "k.txt"}, Options{}); err == nil {
		t.Error("apply without a key")
	}
	if _, err := f.st.Apply(Edit{Key: "k", Kind: event.KindShell, Dir: f.dir}, Options{}); err == nil || !strings.Contains(err.Error(), "not a file edit") {
		t.Errorf("shell kind: %v", err)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\ntwo\n", 0o644)
	e := Edit{Kind: event.KindFilePatch, Dir: f.dir, Patch: "--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"}
	r, err := DryRun(e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
	if r.Diff != want || !r.Changed {
		t.Fatalf("dry run diff:\n%s\nwant:\n%s", r.Diff, want)
	}
	if f.read("a.txt") != "one\ntwo\n" {
		t.Fatal("dry run changed the file")
	}
	ents, _ := os.ReadDir(filepath.Join(f.st.dir, "blobs"))
	if len(ents) != 0 {
		t.Fatal("dry run stored a before-image")
	}
	w, err := DryRun(Edit{Kind: event.KindFileWrite, Dir: f.dir, Path: "a.txt", Content: "one\ntwo\n"}, Options{})
	if err != nil || w.Changed || w.Diff != "" {
		t.Fatalf("dry run of a write that changes nothing: %+v %v", w, err)
	}
}

// Names without a/ and b/ are taken as written (patch -p0); a/ and b/
// are dropped only when every header has them.
func TestPatchNames(t *testing.T) {
	for _, c := range []struct {
		patch string
		want  []string
	}{
		{"--- x.txt\n+++ x.txt\n@@ -1 +1 @@\n-a\n+b\n", []string{"x.txt"}},
		{"--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n", []string{"x.txt"}},
		{"--- b/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n", []string{"b/x.txt"}},
		{"--- /dev/null\n+++ b/d/new.txt\n@@ -0,0 +1 @@\n+n\n", []string{"d/new.txt"}},
		{"diff --git a/x.txt b/x.txt\nindex 1..2 100644\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n", []string{"x.txt"}},
		// Hunk lines that look like headers ("-- c" removed, "++ d" added).
		{"--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n--- c\n+++ d\n", []string{"x.txt"}},
	} {
		files, err := ParsePatch(c.patch)
		if err != nil {
			t.Fatalf("%q: %v", c.patch, err)
		}
		var got []string
		for _, f := range files {
			got = append(got, f.Path)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q: names %v, want %v", c.patch, got, c.want)
		}
	}
}

// A directory swapped for a symlink after the path was checked (a step
// running beside the edit could do it) does not lead the write out of the
// working directory.
func TestSwappedDirectoryStaysInside(t *testing.T) {
	f := newFixture(t)
	outside := t.TempDir()
	if err := os.Mkdir(f.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, at, err := resolve(f.dir, "sub/x.txt", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.path("sub"), f.path("sub.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, f.path("sub")); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(at, []byte("pwned\n"), 0o644, nil); err == nil {
		t.Fatal("write through a swapped directory succeeded")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside: %v", ents)
	}
	if err := remove(at); err == nil {
		t.Fatal("remove through a swapped directory succeeded")
	}

	// A recorded path whose directory became a symlink is not restored.
	if err := os.WriteFile(filepath.Join(outside, "x.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := recorded(f.path("sub/x.txt")); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("recorded path through a symlink: %v", err)
	}
}
