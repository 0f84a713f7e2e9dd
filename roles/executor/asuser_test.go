package executor

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go/jetstream"
)

// secretText is the content of a file only root may read.
const secretText = "root-only-5f0c1d: the step user must never see this\n"

// File edits run as the step user (executor.run_as): a file.write or
// file.patch of a root-owned 0600 file fails with a permission error that
// says so, leaves the file as it was, and no event nor log holds its
// content; a file an edit creates is the user's, and its compensation,
// run as the same user, deletes it. Where the tests do not run as root,
// the executor cannot switch users and the edit is refused, saying so.
func TestFileEditsRunAsTheStepUser(t *testing.T) {
	h := newHarness(t)
	work, err := os.MkdirTemp("", "agentic-asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h.start("n1", filepath.Join(t.TempDir(), "executor"), rec, func(c *Config) {
		c.Runner.DefaultCwd, c.Runner.RunAs, c.Runner.RefuseRoot = work, "nobody", true
	})
	h.elect(1)

	if os.Geteuid() != 0 {
		h.assignStep("n1", "r1", event.Step{ID: "create", Kind: event.KindFileWrite, Path: "new.txt", Content: "x\n"}, 1, nil)
		f := waitFinished(t, rec, "create", 1)
		if f.Status != event.TaskFailed || !strings.Contains(f.Error, "cannot run as nobody") {
			t.Fatalf("edit as nobody on an executor that is not root: %+v", f)
		}
		if _, err := os.Stat(filepath.Join(work, "new.txt")); err == nil {
			t.Fatal("a refused edit wrote its file")
		}
		return
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("the tests need the user nobody: %v", err)
	}
	secret := filepath.Join(work, "private.conf")
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []event.Step{
		{ID: "write", Kind: event.KindFileWrite, Path: "private.conf", Content: "overwritten\n"},
		{ID: "patch", Kind: event.KindFilePatch, Patch: "--- a/private.conf\n+++ b/private.conf\n@@ -1 +1 @@\n-" + secretText + "+patched\n"},
		{ID: "abs", Kind: event.KindFileWrite, Path: secret, Content: "overwritten\n"},
	}
	for _, s := range steps {
		h.assignStep("n1", "r1", s, 1, nil)
		f := waitFinished(t, rec, s.ID, 1)
		if f.Status != event.TaskFailed || f.Class != event.ClassLogic || f.User != "nobody" ||
			!strings.Contains(f.Error, "as user nobody") || !strings.Contains(f.Error, "permission denied") ||
			!strings.Contains(f.Error, "file edits run as the step user nobody") {
			t.Errorf("%s of a root-only file as nobody: %+v, want failed with a permission error", s.ID, f)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(secret, &st); err != nil || readFile(t, secret) != secretText || st.Uid != 0 || st.Mode&0o777 != 0o600 {
		t.Fatalf("root-only file changed: %q, owner %d, mode %o (%v)", readFile(t, secret), st.Uid, st.Mode&0o777, err)
	}

	// A file created by an edit is the user's; its compensation deletes
	// it, as the same user.
	h.assignStep("n1", "r1", event.Step{ID: "create", Kind: event.KindFileWrite, Path: "new.txt", Content: "hello\n", Mode: "0640"}, 1, nil)
	f := waitFinished(t, rec, "create", 1)
	if f.Status != event.TaskSucceeded || f.User != "nobody" {
		t.Fatalf("create as nobody: %+v", f)
	}
	created := filepath.Join(work, "new.txt")
	if err := syscall.Stat(created, &st); err != nil {
		t.Fatal(err)
	}
	if strconv.Itoa(int(st.Uid)) != nobody.Uid || strconv.Itoa(int(st.Gid)) != nobody.Gid || st.Mode&0o777 != 0o640 {
		t.Fatalf("new.txt owned by %d:%d mode %o, want nobody's (%s:%s) 0640", st.Uid, st.Gid, st.Mode&0o777, nobody.Uid, nobody.Gid)
	}
	if u := undo(t, h, rec, f, 1, 1); u.Status != event.TaskSucceeded || u.User != "nobody" {
		t.Fatalf("undo create as nobody: %+v", u)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Fatalf("new.txt after its compensation: %v", err)
	}

	// Neither the events nor the logs hold the root-only content.
	rec.mu.Lock()
	for _, d := range rec.drafts {
		if strings.Contains(string(d.Data), "root-only-5f0c1d") {
			t.Errorf("%s holds the root-only file's content: %s", d.Type, d.Data)
		}
	}
	rec.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if logs := runLogs(ctx, t, h.js, "r1"); strings.Contains(logs, "root-only-5f0c1d") {
		t.Errorf("the run's logs hold the root-only file's content: %q", logs)
	}
}

// runLogs reads every chunk of the run's output from the logs stream.
func runLogs(ctx context.Context, t *testing.T, js jetstream.JetStream, run string) string {
	t.Helper()
	oc, err := js.OrderedConsumer(ctx, bus.LogsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.LogSubject(run, ">")}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		batch, err := oc.FetchNoWait(256)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			b.Write(m.Data())
			n++
		}
		if n == 0 {
			return b.String()
		}
	}
}

// An agentd running as root with no run_as refuses a file edit as it
// refuses a shell step (class policy), writing nothing; one that is not
// root makes it as itself.
func TestFileEditAsRootRefused(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("n1", filepath.Join(t.TempDir(), "executor"), rec, func(c *Config) { c.Runner.RefuseRoot = true })
	h.elect(1)
	h.assignStep("n1", "r1", event.Step{ID: "create", Kind: event.KindFileWrite, Path: "new.txt", Content: "x\n"}, 1, nil)
	f := waitFinished(t, rec, "create", 1)
	_, err := os.Stat(filepath.Join(h.work, "new.txt"))
	if os.Geteuid() != 0 {
		if f.Status != event.TaskSucceeded || err != nil {
			t.Fatalf("edit by an executor that is not root: %+v (%v)", f, err)
		}
		return
	}
	if f.Status != event.TaskFailed || f.Class != event.ClassPolicy || !strings.Contains(f.Error, "executor.run_as") || err == nil {
		t.Fatalf("edit as root with no run_as: %+v (file: %v), want refused, class policy, nothing written", f, err)
	}
}
