package core

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentic-dev/agentic/"

// transport reports why the package path, a dependency of the core, may
// not be one ("" if it may): the core decides from events alone, so it
// reaches no NATS client or server, no Pebble, no gossip, and nothing of
// the module above bus/event (and bus/redact's patterns) that signs,
// sends, stores or hosts.
func transport(path string) string {
	for _, p := range []string{"github.com/nats-io/", "github.com/cockroachdb/pebble", "github.com/hashicorp/memberlist"} {
		if strings.HasPrefix(path, p) {
			return "reaches " + strings.TrimSuffix(p, "/")
		}
	}
	rest, ok := strings.CutPrefix(path, module)
	if !ok {
		return ""
	}
	for _, p := range []string{"bus", "ledger", "node", "cmd"} {
		if rest == p || strings.HasPrefix(rest, p+"/") {
			if rest == "bus/event" || rest == "bus/redact" {
				// The event vocabulary, and the secret patterns the
				// plan check judges a plan in its goal by (goalplan.go:
				// patterns only, no I/O).
				return ""
			}
			return "is " + rest + ", which signs, sends, stores or hosts"
		}
	}
	if rest == "roles" || rest == "roles/orchestrator" || rest == "roles/executor" {
		return "is " + rest + ", a role around a core"
	}
	return ""
}

// deps lists the packages pkg imports, directly or not (its tests' aside).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestCoreImportsNoTransport: the core's dependencies, as go list -deps
// gives them, include no NATS, Pebble or gossip package and nothing of the
// bus but its event vocabulary. The role around it (package orchestrator)
// must fail the same check, or the check would see nothing.
func TestCoreImportsNoTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, d := range deps(t, module+"roles/orchestrator/core") {
		if why := transport(d); why != "" {
			t.Errorf("roles/orchestrator/core imports %s: it %s; keep I/O in package orchestrator and hand the core its results", d, why)
		}
	}
	caught := false
	for _, d := range deps(t, module+"roles/orchestrator") {
		caught = caught || transport(d) != ""
	}
	if !caught {
		t.Error("the check finds nothing in package orchestrator, which holds the lease on NATS: the check is broken")
	}
}
