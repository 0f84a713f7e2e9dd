package runner

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
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
	cmd.Path = "/nonexistent/sh"
	if c, err := start(cmd); err == nil {
		t.Fatalf("start = %+v, want an error", c)
	}
}
