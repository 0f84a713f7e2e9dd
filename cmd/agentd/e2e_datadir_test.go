package main_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/internal/freeport"
)

// TestSecondAgentdOnOneDataDir: a second agentd on the data dir of a
// running one exits at once with the holder's pid, before it starts a
// nats-server (no listener on its port, no nats log line), and the first
// keeps running. After a kill -9 of the first, its LOCK file left behind
// does not stop the next start.
func TestSecondAgentdOnOneDataDir(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	port := freeport.Port(t)
	code, out := runAgentd(t, 30*time.Second,
		"--data", a.data, "--name", a.name, "--log-format", "json",
		"--nats-listen", "127.0.0.1:"+strconv.Itoa(port),
		"--http-listen", "127.0.0.1:"+strconv.Itoa(freeport.Port(t)),
		"--executor-workdir", a.work)
	want := fmt.Sprintf("data dir %s is in use by agentd pid %d (lock %s/LOCK)", a.data, a.cmd.Process.Pid, a.data)
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("second agentd: exit %d, want 1 with %q; output:\n%s", code, want, out)
	}
	if strings.Contains(out, `"component":"nats"`) {
		t.Errorf("the second agentd started a nats-server:\n%s", out)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on the second agentd's NATS port %d", port)
	}
	if !a.running() {
		t.Fatal("the first agentd exited")
	}
	a.waitReady()
	a.kill9()
	a.restart()
}
