package runner

import (
	"bufio"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestServerTalksOverPipes: a server gets its input and gives its output
// through the pipes, sees only the scrubbed environment (a variable of
// the executor on its EnvAllow passes, others do not), its standard
// error arrives redacted, and Stop ends its whole group — a background
// child included.
func TestServerTalksOverPipes(t *testing.T) {
	t.Setenv("AGENTIC_SERVER_OK", "yes")
	t.Setenv("AGENTIC_SERVER_SECRET", "no")
	var mu sync.Mutex
	var stderr strings.Builder
	script := `echo "ok=${AGENTIC_SERVER_OK:-} secret=${AGENTIC_SERVER_SECRET:-} extra=$EXTRA"; ` +
		`echo "password=hunter2hunter2" >&2; sleep 100 & echo "bg=$!"; while read -r l; do echo "got $l"; done`
	s, err := StartServer(ServerSpec{Argv: []string{"/bin/sh", "-c", script}, EnvAllow: []string{"AGENTIC_SERVER_OK"},
		Env: map[string]string{"EXTRA": "1"}},
		Options{EnvAllow: []string{"PATH", "AGENTIC_*"}, KillGrace: 200 * time.Millisecond},
		func(s string) { mu.Lock(); stderr.WriteString(s); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(s.Stdout)
	line := func() string {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return strings.TrimSpace(l)
	}
	if got := line(); got != "ok=yes secret= extra=1" {
		t.Errorf("environment line %q", got)
	}
	bg := line()
	if _, err := s.Stdin.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if got := line(); got != "got ping" {
		t.Errorf("echo %q", got)
	}
	if s.ExitCode() != -1 {
		t.Error("running server has an exit code")
	}
	s.Stop()
	s.Stop() // idempotent
	if groupAlive(s.PID) {
		t.Fatalf("group %d alive after Stop (%s)", s.PID, bg)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(stderr.String(), "hunter2hunter2") || !strings.Contains(stderr.String(), "password=") {
		t.Errorf("stderr not redacted: %q", stderr.String())
	}
}

// TestServerExitSeen: a server that dies is seen (Done, ExitCode); a
// missing program fails to start with a clear error, not later.
func TestServerExitSeen(t *testing.T) {
	s, err := StartServer(ServerSpec{Argv: []string{"/bin/sh", "-c", "exit 3"}}, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("exit not seen")
	}
	if s.ExitCode() != 3 {
		t.Errorf("exit code %d", s.ExitCode())
	}
	s.Stop()
	killed, err := StartServer(ServerSpec{Argv: []string{"sleep", "100"}}, Options{KillGrace: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = killed.signal(syscall.SIGKILL)
	<-killed.Done()
	if killed.ExitCode() != 128+9 {
		t.Errorf("killed: exit code %d", killed.ExitCode())
	}
	killed.Stop()
	missing, err := StartServer(ServerSpec{Argv: []string{"/nonexistent/server"}}, Options{}, nil)
	if err != nil {
		t.Fatalf("the shell starts, then fails to exec: %v", err)
	}
	<-missing.Done()
	if missing.ExitCode() != 127 {
		t.Errorf("missing program: exit %d, want 127", missing.ExitCode())
	}
	missing.Stop()
	if _, err := StartServer(ServerSpec{}, Options{}, nil); err == nil {
		t.Error("empty command: no error")
	}
}
