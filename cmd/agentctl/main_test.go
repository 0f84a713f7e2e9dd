package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/cmd/agentctl/internal/cli"
	"go.uber.org/goleak"
)

// asAgentctl makes the test binary run main, as agentctl, when set: the
// tests start it as a process to send it signals.
const asAgentctl = "AGENTCTL_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asAgentctl) == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// TestSignalsEndWaitOnPlanFIFO sends SIGINT and SIGTERM to an agentctl
// process reading its plan from a FIFO nobody writes to: it exits at once
// with "interrupted" (130) instead of waiting for ever.
func TestSignalsEndWaitOnPlanFIFO(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Fatalf("no /proc to see the process waiting on the FIFO: %v", err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "plan.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatalf("mkfifo: %v", err)
			}
			cmd := exec.Command(os.Args[0], "--server", "nats://127.0.0.1:1", "goal", "submit", "-f", fifo)
			cmd.Env = append(os.Environ(), asAgentctl+"=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					<-exited
				}
			}()
			// The FIFO is opened after the signal handlers are set up.
			fdDir := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "fd")
			poll.Eventually(t, 10*time.Second, "agentctl to open the FIFO", func() bool {
				fds, _ := os.ReadDir(fdDir)
				for _, fd := range fds {
					if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && target == fifo {
						return true
					}
				}
				return false
			})
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("after %s: %v, stderr %q; want exit %d, \"interrupted\"", sig, err, stderr.String(), cli.ExitInterrupted)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("agentctl ignored %s while waiting on a FIFO", sig)
			}
		})
	}
}
