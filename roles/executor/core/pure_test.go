package core

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPure keeps the core a pure state machine: its package imports no
// NATS client or server, no process starting (os/exec, the runner), no
// Pebble and no local state — what it needs comes in inputs — and its
// code reads no clock (time is an input).
func TestPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/nats-io/", "os/exec", "github.com/cockroachdb/pebble",
		"github.com/agentic-dev/agentic/roles/executor/localstate", "github.com/agentic-dev/agentic/roles/executor/runner",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("the core imports %s (through its dependencies): it must stay pure", dep)
			}
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, clock := range []string{"time.Now(", "time.Since(", "time.After(", "time.NewTimer(", "time.NewTicker(", "go func"} {
			if strings.Contains(string(src), clock) {
				t.Errorf("%s uses %s: the core reads no clock and starts no goroutine (time is an input)", f, clock)
			}
		}
	}
}
