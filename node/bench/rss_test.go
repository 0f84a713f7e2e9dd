package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// idleWait is how long agentd sits idle after /readyz before its memory is
// read: long enough for start-up garbage to be collected and background
// timers (lease renewals, consumers' heartbeats) to have run.
const idleWait = 2 * time.Second

// buildAgentd builds cmd/agentd into a temporary directory, as make build
// does (no cgo).
func buildAgentd(tb testing.TB) string {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("no go tool to build agentd: %v", err)
	}
	bin := filepath.Join(tb.TempDir(), "agentd")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/agentic-dev/agentic/cmd/agentd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build agentd: %v\n%s", err, out)
	}
	return bin
}

// idleRSS starts agentd on a fresh data directory with free ports, waits
// for /readyz and idleWait, reads its VmRSS and VmHWM in MiB, and stops it
// with SIGTERM.
func idleRSS(tb testing.TB, bin string) (rss, hwm float64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin,
		"--data", filepath.Join(tb.TempDir(), "data"), "--name", "bench-rss",
		"--nats-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
		"--log-level", "warn", "--log-format", "text")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start agentd: %v", err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		// The banner names the HTTP address; the rest of stderr is kept
		// flowing so agentd never blocks on a full pipe.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "http"); ok {
				if f := strings.Fields(a); len(f) > 0 && strings.HasPrefix(f[0], "http://") {
					select {
					case addr <- strings.TrimPrefix(f[0], "http://"):
					default:
					}
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		exited <- cmd.Wait()
	}()
	defer stopAgentd(tb, cmd, exited)

	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/readyz"
	case err := <-exited:
		exited <- err
		tb.Fatalf("agentd exited before printing its address: %v", err)
	case <-ctx.Done():
		tb.Fatal("agentd printed no HTTP address")
	}
	waitReadyz(tb, ctx, url)
	select {
	case <-time.After(idleWait):
	case err := <-exited:
		exited <- err
		tb.Fatalf("agentd exited while idle: %v", err)
	}
	rss, hwm = procMemory(tb, cmd.Process.Pid)
	return rss, hwm
}

// waitReadyz polls url until it answers 200. It does not use package poll:
// its fixed 20ms pause is the precision of the ready times the benchmarks
// measure with it.
func waitReadyz(tb testing.TB, ctx context.Context, url string) {
	tb.Helper()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				http.DefaultClient.CloseIdleConnections()
				return
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("agentd not ready at %s: %v", url, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// procMemory reads VmRSS and VmHWM of pid, in MiB.
func procMemory(tb testing.TB, pid int) (rss, hwm float64) {
	tb.Helper()
	return procField(tb, pid, "VmRSS:"), procField(tb, pid, "VmHWM:")
}

// procField reads one memory field of /proc/PID/status ("VmRSS:"), in MiB.
func procField(tb testing.TB, pid int, field string) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc status for agentd (not Linux?): %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" || f[0] != field {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			tb.Fatalf("/proc/%d/status: %s: %v", pid, line, err)
		}
		return kb / 1024
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// stopAgentd sends SIGTERM and waits for agentd to exit (killing it after
// 30 s).
func stopAgentd(tb testing.TB, cmd *exec.Cmd, exited chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			tb.Errorf("agentd exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		tb.Errorf("agentd did not stop within 30s of SIGTERM")
	}
}
