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
// executor that starts a long step, kill -9s it, and checks that the step's
// wrapper, its shell and its background child all die with it.
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

	names := []string{"wrapper.pid", "inner.pid", "bg.pid"}
	pids := map[string]int{}
	poll.Eventually(t, 10*time.Second, "the step to record its pids", func() bool {
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
	for n, pid := range pids {
		if !alive(pid) {
			t.Fatalf("%s %d not alive before the kill", n, pid)
		}
		if _, pg, _ := procStat(pid); pg != pids["wrapper.pid"] {
			t.Fatalf("%s %d is in group %d, want the wrapper's %d", n, pid, pg, pids["wrapper.pid"])
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
	if m := groupMembers(pids["wrapper.pid"]); len(m) != 0 {
		t.Fatalf("group %d still has members %v", pids["wrapper.pid"], m)
	}
}
