package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"

	"github.com/agentic-dev/agentic/bus/event"
	"go.uber.org/goleak"
)

// helperEnv, when set, turns the test binary into a stand-in executor
// process (see TestStepDiesWithKilledExecutor); its value is a directory.
const helperEnv = "AGENTIC_RUNNER_TEST_EXECUTOR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(fakeExecutor(dir))
	}
	goleak.VerifyTestMain(m)
}

// fakeExecutor starts a long step that records its pids in dir/a; once
// they are there it kills the runner's guard (which must come back) and
// starts a second step recording its pids in dir/b; then it waits to be
// killed.
func fakeExecutor(dir string) int {
	step := func(sub string) {
		d := filepath.Join(dir, sub)
		_ = os.MkdirAll(d, 0o755)
		script := `echo $$ > inner.pid; sleep 100 & echo $! > bg.pid; sleep 100; wait`
		res := Run(context.Background(), Spec{Kind: event.KindShell, Command: script, Cwd: d}, Options{},
			func(pid int) { _ = os.WriteFile(filepath.Join(d, "leader.pid"), []byte(strconv.Itoa(pid)), 0o600) },
			nil)
		fmt.Fprintf(os.Stderr, "fake executor: step %s ended unexpectedly: %+v\n", sub, res)
		os.Exit(3)
	}
	go step("a")
	if err := poll.Wait(10*time.Second, func() bool {
		if _, ok := readPID(filepath.Join(dir, "a", "bg.pid")); !ok {
			return false
		}
		// The step's shell can write its pids before the runner has
		// listed its group with the guard (started it, the first time).
		leader, ok := readPID(filepath.Join(dir, "a", "leader.pid"))
		guardian.mu.Lock()
		defer guardian.mu.Unlock()
		return ok && guardian.cmd != nil && guardian.live[leader]
	}); err != nil {
		fmt.Fprintln(os.Stderr, "fake executor: step a never wrote its pids or was never listed with the guard")
		return 3
	}
	guardian.mu.Lock()
	p := guardian.cmd.Process
	guardian.mu.Unlock()
	_ = p.Kill()
	_, _ = p.Wait()
	step("b")
	return 3
}

// procStat returns the state letter and process group of pid; ok is false
// when there is no such process.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, false
	}
	f := strings.Fields(s[i+2:]) // state ppid pgrp ...
	if len(f) < 3 {
		return 0, 0, false
	}
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], pgrp, true
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	st, _, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X'
}

// groupMembers lists the live processes of group pgid.
func groupMembers(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pg, ok := procStat(pid); ok && pg == pgid && st != 'Z' && st != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// readPID reads a pid file; ok is false while it is missing or incomplete.
func readPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}
