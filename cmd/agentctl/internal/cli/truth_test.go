package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/api"
)

// TestRunShowReplannedStep: a step that failed and was replanned is not
// said to have been given up for another because of a node: its earlier
// attempts belong to the earlier revision. A step whose attempt a lost
// node took is still said so, with the code's words.
func TestRunShowReplannedStep(t *testing.T) {
	h := newHarness(t).withNode()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h.node.with(func(f *fakeNode) {
		f.runs = []api.Run{{ID: runC, Goal: "fix", Status: "running", Revision: 2, CreatedAt: t0, Steps: []api.Step{
			{ID: "test", Kind: "shell", Status: "pending", Attempt: 2, Reassigned: 2},
			{ID: "deploy", Kind: "shell", Status: "pending", Attempt: 1, Reassigned: 1, Code: "not_started"},
		}}}
	})
	r := h.run("run", "show", runC)
	if r.code != 0 {
		t.Fatalf("run show = %+v", r)
	}
	for _, want := range []string{
		"test: 2 attempts under an earlier plan revision (they do not count against its retries)",
		"deploy: 1 attempt given up for another (its executor did not start it in time)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run show lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "test: 2 attempts given up") {
		t.Errorf("a replanned step is said to be given up for another:\n%s", r.stdout)
	}
}
