package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

// TestStepDiesWithKilledExecutor re-executes the test binary as a stand-in
// executor that starts two long steps — the runner's guard killed and
// replaced between them — kill -9s it, and checks that each step's shell,
// its foreground and its background child all die with it.
func TestStepDiesWithKilledExecutor(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	names := []string{"a/leader.pid", "a/inner.pid", "a/bg.pid", "b/leader.pid", "b/inner.pid", "b/bg.pid"}
	pids := map[string]int{}
	poll.Eventually(t, 10*time.Second, "the steps to record their pids", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("fake executor exited early: %v", err)
		default:
		}
		for _, n := range names {
			pid, ok := readPID(filepath.Join(dir, n))
			if !ok {
				return false
			}
			pids[n] = pid
		}
		return true
	})
	var groups []int
	for n, pid := range pids {
		leader := pids[filepath.Dir(n)+"/leader.pid"]
		if !alive(pid) {
			t.Fatalf("%s %d not alive before the kill", n, pid)
		}
		if _, pg, _ := procStat(pid); pg != leader {
			t.Fatalf("%s %d is in group %d, want its step's %d", n, pid, pg, leader)
		}
		if filepath.Base(n) == "leader.pid" {
			groups = append(groups, pid)
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }) // if the test failed
		}
	}
	// The fg sleep has no pid file: count the groups' members instead.
	for _, g := range groups {
		if m := groupMembers(g); len(m) != 3 {
			t.Fatalf("group %d has members %v, want the shell and two sleeps", g, m)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	exited <- nil
	poll.Eventually(t, 5*time.Second, "the step's processes to die with the executor", func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	for _, g := range groups {
		if m := groupMembers(g); len(m) != 0 {
			t.Fatalf("group %d still has members %v", g, m)
		}
	}
}
