package event_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The protocol package owns its types: it depends on no role, node, ledger
// or command package of this module (the roles depend on it, never the
// other way round), and not on yaml, which belongs to authoring formats.
// It lists every package bus/event imports, directly or not.
func TestProtocolImportsNoRoles(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/agentic-dev/agentic/bus/event").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/agentic-dev/agentic/"
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list gave %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		inModule, mine := strings.CutPrefix(dep, module)
		switch {
		case strings.Contains(dep, "yaml"):
			t.Errorf("bus/event depends on %s: yaml belongs to the plan authoring formats (roles/planner/plan)", dep)
		case mine && inModule != "bus/event" && !strings.HasPrefix(inModule, "bus/"):
			t.Errorf("bus/event depends on %s: the protocol may not import roles, nodes, ledgers or commands", dep)
		}
	}
}
