package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve"
)

// TestProposalCommands: on a real node, three runs of a family fail the
// same command → improve eval --now → proposal ls lists the pending
// proposal → proposal show says how it was validated (forbidden checks
// only: a replay proves nothing for a note) → proposal approve → the
// note is in force (improve settings) and proposal show prints every
// state; approving again, or an unknown proposal, is refused and
// publishes nothing.
func TestProposalCommands(t *testing.T) {
	h, n := nodeHarness(t)
	for range 3 {
		id := n.Submit(t, "ls.yaml", "goal: list\nfamily: web\nsteps:\n  - id: list\n    run: ls /nonexistent/dir\n")
		poll.Eventually(t, 20*time.Second, "the run failed", func() bool {
			s, err := n.API.RunSummary(context.Background(), id)
			return err == nil && s.Status == event.RunFailed
		})
	}
	if r := h.run("improve", "eval", "--now"); r.code != 0 || !strings.HasPrefix(r.stdout, "evaluation asked") {
		t.Fatalf("improve eval --now = %+v", r)
	}
	var ps []improve.Proposal
	poll.Eventually(t, 20*time.Second, "proposal ls lists a shape_failures proposal", func() bool {
		r := h.run("proposal", "ls", "-o", "json")
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &ps) == nil && len(ps) == 1 && ps[0].Pattern == improve.PatternShapeFailures
	})
	id := ps[0].ID
	if r := h.run("proposal", "ls"); r.code != 0 || !strings.Contains(r.stdout, id+"  pending  shape_failures") {
		t.Fatalf("proposal ls = %+v", r)
	}
	show := h.run("proposal", "show", id)
	for _, want := range []string{"status     pending", "family     web", "evidence   3 event(s)", "validated  forbidden-checks: ", "proves nothing", "add note"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("proposal show lacks %q:\n%s", want, show.stdout)
		}
	}
	if r := h.run("proposal", "approve", id, "--reason", "yes", "--timeout", "20s"); r.code != 0 || !strings.HasPrefix(r.stdout, "approved proposal "+id) {
		t.Fatalf("proposal approve = %+v", r)
	}
	poll.Eventually(t, 20*time.Second, "the proposal applied", func() bool {
		return strings.Contains(h.run("proposal", "show", id).stdout, "status     applied")
	})
	show = h.run("proposal", "show", id)
	pending, approved, applied := strings.Index(show.stdout, "\n  pending "), strings.Index(show.stdout, "\n  approved "), strings.Index(show.stdout, "\n  applied ")
	if pending < 0 || approved < pending || applied < approved || !strings.Contains(show.stdout, "by "+n.Operator.ID) {
		t.Errorf("proposal show history:\n%s", show.stdout)
	}
	if r := h.run("improve", "settings"); r.code != 0 || !strings.Contains(r.stdout, "`ls` failed 3 of 3 times in runs of family web") {
		t.Errorf("improve settings = %+v", r)
	}
	if r := h.run("proposal", "approve", id); r.code == 0 || !strings.Contains(r.stderr, "not pending: nothing was published") {
		t.Errorf("approving an applied proposal = %+v", r)
	}
	if r := h.run("proposal", "reject", "p-000000000000"); r.code == 0 || !strings.Contains(r.stderr, "no proposal") {
		t.Errorf("rejecting an unknown proposal = %+v", r)
	}
}
