package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Budgets of agentctl's package initialisation, in bytes allocated
// (GODEBUG=inittrace=1): a measure of the work every invocation does
// before main that, unlike its time, does not move with the machine's
// load. agentctl's was 1.36 MB (500 KB of it agentic's own packages:
// every rule set's hint index in bus/redact, a copy of the event-type
// table per protocol version, regular expressions that rare paths use)
// before the server side left it and the rest became lazy or lighter; it
// is ~360 KB, 140 KB of it agentic's.
const (
	initBudget       = 512 << 10
	moduleInitBudget = 192 << 10
)

// TestAgentctlInitIsCheap builds agentctl and fails when its package
// initialisation allocates more than initBudget, or agentic's own
// packages more than moduleInitBudget: make a new table or regular
// expression lazy (sync.OnceValue) unless every invocation needs it.
func TestAgentctlInitIsCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentctl")
	}
	bin := filepath.Join(t.TempDir(), "agentctl")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := exec.Command(bin, "--help")
	run.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("agentctl --help: %v\n%s", err, stderr.Bytes())
	}
	var total, module int
	var top []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		// init PKG @0.1 ms, 0.02 ms clock, 1234 bytes, 5 allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", line, err)
		}
		total += n
		if strings.HasPrefix(f[1], "github.com/agentic-dev/agentic/") {
			module += n
			if n > 16<<10 {
				top = append(top, f[1]+" "+f[7])
			}
		}
	}
	if total == 0 {
		t.Fatalf("no inittrace lines in agentctl's stderr:\n%s", stderr.Bytes())
	}
	t.Logf("package initialisation: %d bytes, %d of them agentic's (largest: %v)", total, module, top)
	if total > initBudget {
		t.Errorf("agentctl's package initialisation allocates %d bytes, over the budget of %d", total, initBudget)
	}
	if module > moduleInitBudget {
		t.Errorf("agentic's packages allocate %d bytes at agentctl's initialisation, over the budget of %d (largest: %v)", module, moduleInitBudget, top)
	}
}
