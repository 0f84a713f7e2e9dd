package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// A group whose only member is a zombie counts as gone: the zombie's parent
// may reap it late or never.
func TestGroupAliveIgnoresZombies(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read x")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	if !groupAlive(pid) {
		t.Fatal("groupAlive = false for a running group")
	}
	stdin.Close() // read x returns, the shell exits and stays a zombie: nobody waits yet
	poll.Eventually(t, 10*time.Second, "the shell to become a zombie", func() bool {
		st, _, ok := procStat(pid)
		return ok && st == 'Z'
	})
	if err := syscall.Kill(-pid, 0); err != nil {
		t.Fatalf("kill(-pgid, 0) = %v; the zombie should still be in its group", err)
	}
	if groupAlive(pid) {
		t.Fatal("groupAlive = true for a group of one zombie")
	}
}

func TestStartFailure(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd := command("true", t.TempDir(), nil, nil, w, w)
	cmd.path = "/nonexistent/sh"
	if c, err := start(cmd); err == nil {
		t.Fatalf("start = %+v, want an error", c)
	}
}

// The guard is told that a step's group is gone with the next step's
// listing, in the same write, or within unlistDelay when none starts.
func TestGuardToldOfGoneGroups(t *testing.T) {
	opts := Options{DefaultCwd: t.TempDir()}
	first := Run(context.Background(), shellSpec("true"), opts, nil, nil)
	if first.Status != event.TaskSucceeded {
		t.Fatal(first.Error)
	}
	var listed bool
	second := Run(context.Background(), shellSpec("true"), opts, func(pid int) {
		guardian.mu.Lock()
		defer guardian.mu.Unlock()
		listed = guardian.live[pid] && !slices.Contains(guardian.gone, first.PID)
	}, nil)
	if second.Status != event.TaskSucceeded || !listed {
		t.Fatalf("second step %+v: listed without the first one's group pending = %v", second, listed)
	}
	poll.Eventually(t, 10*time.Second, "the guard told the second group is gone", func() bool {
		guardian.mu.Lock()
		defer guardian.mu.Unlock()
		return len(guardian.gone) == 0 && !guardian.pending && !guardian.live[second.PID]
	})
}

// What a guard reads: a listing carries the groups gone before it, in one
// write; groups gone with no listing after them are written within
// unlistDelay.
func TestGuardLines(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	g := &groupGuard{w: w, live: map[int]bool{}}
	read := func() string {
		t.Helper()
		buf := make([]byte, 256)
		n, err := r.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return string(buf[:n])
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(g.add(11))
	if got := read(); got != "+ 11\n" {
		t.Fatalf("first listing %q", got)
	}
	must(g.add(12))
	_ = read()
	g.remove(11)
	g.remove(12)
	must(g.add(13))
	if got := read(); got != "- 11\n- 12\n+ 13\n" {
		t.Fatalf("listing after two groups went: %q, want both unlisted in the same write", got)
	}
	g.remove(13)
	if got := read(); got != "- 13\n" {
		t.Fatalf("a group gone with no listing after it: %q", got)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.live) != 0 || len(g.gone) != 0 || g.pending {
		t.Fatalf("guard state after all groups went: live %v gone %v pending %v", g.live, g.gone, g.pending)
	}
}

// procCPU is the user and system CPU time process pid has used (in clock
// ticks of 10ms).
func procCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// What comes first decides: a stop before the leader is reaped is the
// step's outcome; one after it changes nothing, and stops no group.
func TestStopperFirstWins(t *testing.T) {
	done := make(chan struct{})
	close(done)
	ctx, cancel := context.WithCancel(context.Background())
	s := armStopper(ctx, time.Hour, 1<<30, time.Millisecond, done) // no such group
	if why := s.disarm(); why != stopNone {
		t.Fatalf("disarm before any stop = %d, want stopNone", why)
	}
	cancel() // after the reap: the callback is unhooked, nothing fires
	if why := s.why.Load(); why != stopReaped {
		t.Fatalf("a cancel after the reap changed the outcome to %d", why)
	}

	ctx, cancel = context.WithCancel(context.Background())
	s = armStopper(ctx, time.Hour, 1<<30, time.Millisecond, done)
	cancel()
	poll.Eventually(t, 10*time.Second, "the cancel to fire", func() bool { return s.why.Load() != stopNone })
	if why := s.disarm(); why != stopCancel {
		t.Fatalf("disarm after a cancel = %d, want stopCancel", why)
	}

	s = armStopper(context.Background(), time.Nanosecond, 1<<30, time.Millisecond, done)
	poll.Eventually(t, 10*time.Second, "the timeout to fire", func() bool { return s.why.Load() != stopNone })
	if why := s.disarm(); why != stopTimeout {
		t.Fatalf("disarm after the timeout = %d, want stopTimeout", why)
	}
}
