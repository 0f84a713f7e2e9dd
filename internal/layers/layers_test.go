// Package layers holds the test that keeps the module's layers pointing
// down: cmd → node → roles (and config) → ledger → bus, with internal/
// below them all.
package layers

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentic-dev/agentic/"

// rank is each top-level folder's layer: a package may import only
// packages of its own folder, of a lower layer, or of internal/.
var rank = map[string]int{"internal": 0, "bus": 1, "ledger": 2, "config": 3, "roles": 3, "examples": 3, "node": 4, "deploy": 5, "cmd": 5}

// upward are the imports that still point up, each with what would
// remove it. The list only shrinks: a new upward import fails the test,
// and so does an entry that no longer exists.
var upward = map[string]string{}

type pkg struct {
	ImportPath string
	Imports    []string
}

// TestImportsPointDown lists every package of the module with its
// imports (not its tests': test kits may reach up) and fails on an import that points to a
// higher layer and is not in upward.
func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	found := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, module)
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if up(from, to) {
				found[from+" -> "+to] = true
			}
		}
	}
	for edge := range found {
		if _, ok := upward[edge]; !ok {
			t.Errorf("%s points up (layers: cmd → node → roles, config → ledger → bus → internal)", edge)
		}
	}
	for edge := range upward {
		if !found[edge] {
			t.Errorf("%s no longer points up: remove it from upward", edge)
		}
	}
}

// floor are packages outside internal/ that stand on the floor too: the
// protocol's vocabulary (event types, alarms, statuses), which imports
// nothing of the module.
var floor = []string{"bus/event"}

// up reports whether from importing to points up a layer. config may
// import neither roles nor node.
func up(from, to string) bool {
	if slices.Contains(floor, to) {
		return false
	}
	top := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	f, g := top(from), top(to)
	if f == g {
		return false
	}
	if f == "config" && (g == "roles" || g == "node") {
		return true
	}
	rf, ok1 := rank[f]
	rg, ok2 := rank[g]
	if !ok1 || !ok2 {
		return true // a new top-level folder needs a layer
	}
	return rg > rf
}
