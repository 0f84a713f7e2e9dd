package fileedit

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
)

// Edits made through Options.As as nobody (runner.AsUser): a file nobody
// owns is edited and restored and stays nobody's; a file root owns that
// nobody could replace (0666, in a directory every user may write) is
// not taken over — the edit fails, naming the owner it would lose, and
// changes nothing; the store, written as the process, stays root's.
// Where the tests do not run as root, As refuses and nothing changes.
func TestEditsAsAnotherUser(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "work")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(root), root, dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(filepath.Join(root, "data", "executor-edits"))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{As: func(fn func() error) error {
		_, err := runner.AsUser(runner.Spec{}, runner.Options{RunAs: "nobody"}, fn)
		return err
	}}
	if os.Geteuid() != 0 {
		_, err := st.Apply(Edit{Key: "r/s", Kind: event.KindFileWrite, Dir: dir, Path: "new.txt", Content: "x"}, o)
		if err == nil || !strings.Contains(err.Error(), "cannot run as nobody") {
			t.Fatalf("edit as nobody by a process that is not root: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
			t.Fatal("a refused edit wrote its file")
		}
		return
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("the tests need the user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	owner := func(p string) (int, int) {
		var s syscall.Stat_t
		if err := syscall.Stat(p, &s); err != nil {
			t.Fatal(err)
		}
		return int(s.Uid), int(s.Gid)
	}

	mine := filepath.Join(dir, "mine.conf")
	if err := os.WriteFile(mine, []byte("a = 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(mine, uid, gid); err != nil {
		t.Fatal(err)
	}
	res, err := st.Apply(Edit{Key: "r/mine", Kind: event.KindFileWrite, Dir: dir, Path: "mine.conf", Content: "a = 2\n"}, o)
	if err != nil || !strings.Contains(res.Diff, "+a = 2") {
		t.Fatalf("edit of nobody's file as nobody: %v %q", err, res.Diff)
	}
	if u, g := owner(mine); u != uid || g != gid {
		t.Fatalf("mine.conf owned by %d:%d after the edit, want %d:%d", u, g, uid, gid)
	}
	if _, err := st.Restore("r/mine", res.Edits, o); err != nil {
		t.Fatalf("restore as nobody: %v", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "a = 1\n" {
		t.Fatalf("mine.conf after restore: %q", b)
	}
	if u, _ := owner(mine); u != uid {
		t.Fatalf("mine.conf owned by %d after the restore", u)
	}
	blobs, _ := os.ReadDir(filepath.Join(root, "data", "executor-edits", "blobs"))
	for _, b := range blobs {
		if u, _ := owner(filepath.Join(root, "data", "executor-edits", "blobs", b.Name())); u != 0 {
			t.Fatalf("before-image %s owned by %d: the store is the process's", b.Name(), u)
		}
	}

	shared := filepath.Join(dir, "shared.conf")
	if err := os.WriteFile(shared, []byte("b = 1\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = st.Apply(Edit{Key: "r/shared", Kind: event.KindFileWrite, Dir: dir, Path: "shared.conf", Content: "b = 2\n"}, o)
	if err == nil || !strings.Contains(err.Error(), "keep the file's owner (uid 0, gid 0)") {
		t.Fatalf("edit of root's 0666 file as nobody: %v, want refused for its owner", err)
	}
	if b, _ := os.ReadFile(shared); string(b) != "b = 1\n" {
		t.Fatalf("shared.conf changed: %q", b)
	}
	if u, _ := owner(shared); u != 0 {
		t.Fatalf("shared.conf taken over by %d", u)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".agentic-edit-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
