package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// countingZeros is an endless stream of zero bytes that counts what was
// read from it.
type countingZeros struct{ n int }

func (z *countingZeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += len(p)
	return len(p), nil
}

func TestGoalSubmitEndlessInputIsCapped(t *testing.T) {
	h := newHarness(t)
	limit := fmt.Sprintf("is larger than the %d KiB limit; nothing was submitted", plan.MaxFileBytes>>10)

	if _, err := os.Stat("/dev/zero"); err == nil {
		r := h.run("goal", "submit", "-f", "/dev/zero")
		if r.code != ExitError || !strings.Contains(r.stderr, "error: plan file /dev/zero "+limit) {
			t.Errorf("-f /dev/zero = %+v", r)
		}
	}

	zeros := &countingZeros{}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"--server", h.url, "--creds", h.creds, "goal", "submit", "-f", "-"},
		Env{Stdin: zeros, Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	if code != ExitError || !strings.Contains(stderr.String(), "error: plan file stdin "+limit) {
		t.Errorf("-f - from an endless stdin = %d %q %q", code, stdout.String(), stderr.String())
	}
	if zeros.n > plan.MaxFileBytes+1 {
		t.Errorf("read %d bytes of stdin; at most %d may be read", zeros.n, plan.MaxFileBytes+1)
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events published", n)
	}
}

// mkfifo makes a FIFO in a fresh directory.
func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	return path
}

// openedBy waits until a descriptor of process pid ("self" for this one)
// is open on path: the command is then waiting on it.
func openedBy(t *testing.T, pid, path string) {
	t.Helper()
	dir := filepath.Join("/proc", pid, "fd")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("no %s to see the command waiting: %v", dir, err)
	}
	poll.Eventually(t, 10*time.Second, "a descriptor open on "+path, func() bool {
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && target == path {
				return true
			}
		}
		return false
	})
}

func TestGoalSubmitFIFOWithoutWriterIsCancellable(t *testing.T) {
	h := newHarness(t)
	fifo := mkfifo(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- h.runCtx(ctx, nil, "goal", "submit", "-f", fifo) }()
	openedBy(t, "self", fifo)
	cancel()
	select {
	case r := <-done:
		if r.code != ExitInterrupted || !strings.Contains(r.stderr, "interrupted") {
			t.Errorf("cancelled submit from a FIFO without writer = %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("submit from a FIFO without writer ignored its cancelled context")
	}
}

func TestGoalSubmitFIFOWithSilentWriterIsCancellable(t *testing.T) {
	h := newHarness(t)
	fifo := mkfifo(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- h.runCtx(ctx, nil, "goal", "submit", "-f", fifo) }()
	// A writer that never writes: opening it blocks until agentctl has
	// the FIFO open for reading.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cancel()
	select {
	case r := <-done:
		if r.code != ExitInterrupted {
			t.Errorf("cancelled submit from a silent FIFO = %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("submit from a silent FIFO ignored its cancelled context")
	}
}

func TestGoalSubmitFromFIFO(t *testing.T) {
	h := newHarness(t).withNode()
	fifo := mkfifo(t)
	done := make(chan result, 1)
	go func() { done <- h.run("goal", "submit", "-f", fifo) }()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Written in two parts: the reader waits for the writer to finish.
	half := len(goodPlan) / 2
	writeSubmitted(t, h, w, done, goodPlan[:half], goodPlan[half:])
}

// writeSubmitted writes the plan's parts to w, closes it, and checks that
// the submit waiting on done published the goal and said its run.
func writeSubmitted(t *testing.T, h *harness, w io.WriteCloser, done <-chan result, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if _, err := io.WriteString(w, part); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != ExitOK || strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("submit = %+v", r)
	}
	if n := len(h.events()); n != 1 {
		t.Errorf("%d events published; want the goal", n)
	}
}

func TestGoalSubmitStdinIsCancellable(t *testing.T) {
	h := newHarness(t)
	pr, pw := io.Pipe()
	defer pw.Close() // ends the read left behind by the cancel
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- Run(ctx, []string{"--server", h.url, "--creds", h.creds, "goal", "submit", "-f", "-"},
			Env{Stdin: pr, Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }})
	}()
	// The command is reading once stdin has taken a write.
	if _, err := pw.Write([]byte("steps:\n")); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("cancelled submit from stdin = %d %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("submit from a silent stdin ignored its cancelled context")
	}
}

func TestGoalSubmitEncodingAndSecretErrors(t *testing.T) {
	h := newHarness(t)
	utf16 := []byte{0xff, 0xfe}
	for _, r := range "steps:\n  - id: a\n    run: x\n" {
		utf16 = append(utf16, byte(r), 0)
	}
	tests := []struct {
		name, content, want string
	}{
		{"utf16.yaml", string(utf16), "plan file is UTF-16 (little-endian); save it as UTF-8"},
		{"secret.yaml", "steps:\n  - id: a\n    run: x\n    env: {DB_PASSWORD: hunter2}\n", "env DB_PASSWORD holds what looks like a secret"},
		// Outside any field, a secret is still found before publishing, by
		// the check signing applies.
		{"comment.yaml", "# password: hunter2\nsteps:\n  - id: a\n    run: x\n", "holds what looks like a secret (key=value secret)"},
		{"timeout.yaml", "steps:\n  - id: a\n    run: x\n    timeout: 2562047h\n", "timeout is 2562047h0m0s; the limit is 24h0m0s"},
		// Under the file limit, over the event limit once JSON-encoded.
		{"big.yaml", "steps:\n  - id: a\n    run: x\n    env: {BIG: '" + strings.Repeat("<", 200<<10) + "'}\n", "JSON-encoded, over the 640 KiB limit of one event"},
	}
	for _, tt := range tests {
		path := writePlan(t, tt.name, tt.content)
		r := h.run("goal", "submit", "-f", path)
		if r.code != ExitError || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "nothing was submitted") {
			t.Errorf("%s: submit = %+v; want %q", tt.name, r, tt.want)
		}
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events published", n)
	}
}

// A writer that wrote everything and closed before the reader began to
// wait: the wait sees the data (the runtime poller's edge came before it
// and is not waited for again).
func TestWaitReadableAfterTheWriterLeft(t *testing.T) {
	fifo := mkfifo(t)
	for i := range 50 {
		r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, goodPlan); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched() // let the poller see the edge first
		done := make(chan error, 1)
		go func() { done <- waitReadable(r) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			r.Close()
			t.Fatalf("round %d: waitReadable missed data written before it began", i)
		}
		b, err := io.ReadAll(r)
		if err != nil || string(b) != goodPlan {
			t.Fatalf("round %d: read %q, %v", i, b, err)
		}
		r.Close()
	}
}
