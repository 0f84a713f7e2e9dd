package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// TestPlanYAMLGit: plan show -o yaml of a git run writes the git block
// and the plan's own steps — not the steps the planner added — and parses
// back to the same plan.
func TestPlanYAMLGit(t *testing.T) {
	p, err := plan.Parse("fix.yaml", []byte(`
goal: fix
git: {repo: /srv/r, base: main, push: origin, forge: github, pull_request: {title: Fix it, draft: true}}
steps:
  - {id: fix, path: a.txt, content: "x\n"}
  - {id: test, run: make test, depends_on: [fix]}
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := planYAML(*p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "git.worktree") || !strings.Contains(string(b), "repo: /srv/r") {
		t.Errorf("yaml:\n%s", b)
	}
	again, err := plan.Parse("again.yaml", b)
	if err != nil || !reflect.DeepEqual(again, p) {
		t.Fatalf("round trip: %v\n%+v\nwant\n%+v\n%s", err, again, p, b)
	}
}
