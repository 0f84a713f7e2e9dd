package runner

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// openDir is a directory every user may write in (the parents t.TempDir
// makes are 0700).
func openDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// AsUser runs its function with the step user's file system identity: a
// root-only file cannot be read, a file created is the user's; the rest
// of the process keeps its own, even while many run at once. Where the
// executor is not root it refuses to switch users, and runs fn as itself
// when the user is its own.
func TestAsUser(t *testing.T) {
	dir := openDir(t)
	if _, err := AsUser(Spec{}, Options{RunAs: currentUser()}, func() error {
		return os.WriteFile(filepath.Join(dir, "self"), []byte("x"), 0o600)
	}); err != nil {
		t.Fatalf("as the executor's own user: %v", err)
	}
	if os.Geteuid() != 0 {
		ran := false
		_, err := AsUser(Spec{}, Options{RunAs: "root"}, func() error { ran = true; return nil })
		if err == nil || ran || !strings.Contains(err.Error(), "cannot run as root: the executor runs as") || ClassOf(err) != event.ClassLogic {
			t.Fatalf("non-root executor acting as root: ran %v, err %v", ran, err)
		}
		return
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("the tests need the user nobody: %v", err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Readable by root's group: root's supplementary groups are not the
	// user's.
	group := filepath.Join(dir, "group")
	if err := os.WriteFile(group, []byte("root's group\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			name, err := AsUser(Spec{}, Options{RunAs: "nobody"}, func() error {
				if _, err := os.ReadFile(secret); !errors.Is(err, fs.ErrPermission) {
					return errors.New("nobody read a root-only file (or failed otherwise): " + errString(err))
				}
				if _, err := os.ReadFile(group); !errors.Is(err, fs.ErrPermission) {
					return errors.New("nobody read a file of root's group: " + errString(err))
				}
				p := filepath.Join(dir, "mine"+strconv.Itoa(i))
				if err := os.WriteFile(p, []byte("x"), 0o640); err != nil {
					return err
				}
				return os.Chown(p, 0, 0) // only root may give a file away
			})
			if name != "nobody" || !errors.Is(err, fs.ErrPermission) {
				errs <- errors.New("as nobody: user " + name + ", err " + errString(err))
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := os.ReadFile(secret); err != nil {
				errs <- errors.New("the executor lost its own identity: " + err.Error())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 16 {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, "mine"+strconv.Itoa(i)), &st); err != nil {
			t.Fatal(err)
		}
		if strconv.Itoa(int(st.Uid)) != u.Uid || strconv.Itoa(int(st.Gid)) != u.Gid {
			t.Fatalf("file created as nobody is owned by %d:%d, want %s:%s", st.Uid, st.Gid, u.Uid, u.Gid)
		}
	}
	if _, err := os.ReadFile(secret); err != nil {
		t.Fatalf("after AsUser the test goroutine cannot read its file: %v", err)
	}
	// Refused as Run refuses it.
	_, err = AsUser(Spec{}, Options{RefuseRoot: true}, func() error { t.Fatal("ran as root"); return nil })
	if ClassOf(err) != event.ClassPolicy || !strings.Contains(err.Error(), "refusing to run the step as root") {
		t.Fatalf("as root with RefuseRoot: %v (class %s)", err, ClassOf(err))
	}
	_, err = AsUser(Spec{}, Options{RunAs: "no-such-user-agentic"}, func() error { t.Fatal("ran"); return nil })
	if ClassOf(err) != event.ClassLogic || !strings.Contains(err.Error(), "no such user") {
		t.Fatalf("unknown user: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
