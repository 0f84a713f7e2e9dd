// Package examples_test checks the example plans as make demo runs them:
// each runs to the end under the shipped default policy, or says up
// front why it waits.
package examples_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
	"github.com/agentic-dev/agentic/roles/policy"
)

// waits are the examples that do not run to the end on their own under
// make demo's setup, and the words their header comment and README.md say
// it with.
var waits = map[string]string{
	"critique.yaml": "no_planner",
	"research.yaml": "scopes.network",
}

// Every step of every example is allowed by the default policy as the
// demo's executor would judge it (no gate stops the run: a command whose
// write target is known only at run time, as ${TMPDIR:-/tmp}, would be
// judged as the worst case and wait for an approval); every example is in
// README.md; and one that waits for something else says so in its header
// and in README.md.
func TestExamplesRunToTheEnd(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if ext := filepath.Ext(name); ext != ".yaml" && ext != ".json" {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.Parse(name, data)
			if err != nil {
				t.Fatalf("does not parse: %v", err)
			}
			if !strings.Contains(string(readme), "`"+name+"`") {
				t.Errorf("README.md does not list %s", name)
			}
			for _, s := range p.Steps {
				switch s.Kind {
				case event.KindShell, event.KindFileWrite, event.KindFilePatch:
				default:
					continue
				}
				if v := policy.Default().JudgeStep(s, s.Cwd); v.Action != policy.Allow {
					t.Errorf("step %s would wait at a gate under the default policy (%s, rule %q): %s", s.ID, v.Action, v.Rule, v.Why)
				}
			}
			if w, ok := waits[name]; ok {
				if !strings.Contains(header(string(data)), w) {
					t.Errorf("%s waits, but its header comment does not say why (%q)", name, w)
				}
				if !strings.Contains(string(readme), w) {
					t.Errorf("%s waits, but README.md does not say why (%q)", name, w)
				}
			}
		})
	}
	if n < 5 {
		t.Fatalf("found %d examples", n)
	}
}

// header is the comment block a YAML example starts with.
func header(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
