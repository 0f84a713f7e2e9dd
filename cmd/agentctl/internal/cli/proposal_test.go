package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/nodetest"
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
	if r := h.run("improve", "settings"); r.code != 0 || strings.Count(r.stdout, "  (none") != 3 {
		t.Errorf("improve settings on a fresh node: every section should say (none): %+v", r)
	}
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

// TestProposalShowsARevert: the loop end to end through agentctl on a
// real node whose executor times steps out at 1s: three runs of a family
// time out → improve eval --now → proposal approve → the next run of the
// step succeeds → runs of the family fail → the leader reverts the
// change, and proposal show prints every state (pending, approved,
// applied, reverted) with the numbers.
func TestProposalShowsARevert(t *testing.T) {
	cfg := nodetest.Config(t.TempDir())
	cfg.Executor.DefaultTimeout = time.Second
	n := nodetest.Start(t, cfg)
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}
	runs := func(plan string, count int, want event.RunStatus) {
		t.Helper()
		for range count {
			if r := n.WaitRun(t, n.Submit(t, "p.yaml", plan), 60*time.Second); r.Status != want {
				t.Fatalf("run %s: %s (%s), want %s", r.ID, r.Status, r.Reason, want)
			}
		}
	}
	const (
		slow   = "goal: fetch\nfamily: nightly\nsteps:\n  - id: fetch\n    run: sleep 2\n"
		quick  = "goal: quick\nfamily: nightly\nsteps:\n  - id: quick\n    run: \"true\"\n"
		broken = "goal: broken\nfamily: nightly\nsteps:\n  - id: broken\n    run: \"false\"\n"
	)
	runs(quick, 3, event.RunSucceeded)
	runs(slow, 3, event.RunFailed)
	if r := h.run("improve", "eval", "--now"); r.code != 0 {
		t.Fatalf("improve eval = %+v", r)
	}
	var ps []improve.Proposal
	poll.Eventually(t, 20*time.Second, "a timeouts proposal", func() bool {
		r := h.run("proposal", "ls", "--status", "pending", "-o", "json")
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &ps) == nil && len(ps) == 1 && ps[0].Pattern == improve.PatternTimeouts
	})
	id := ps[0].ID
	if show := h.run("proposal", "show", id); !strings.Contains(show.stdout, "validated  replay: replayed ") {
		t.Errorf("proposal show of a step defaults change:\n%s", show.stdout)
	}
	if r := h.run("proposal", "approve", id, "--timeout", "20s"); r.code != 0 {
		t.Fatalf("proposal approve = %+v", r)
	}
	poll.Eventually(t, 20*time.Second, "applied", func() bool {
		return strings.Contains(h.run("proposal", "show", id).stdout, "status     applied")
	})
	runs(slow, 1, event.RunSucceeded)
	runs(broken, 4, event.RunFailed)
	var show result
	poll.Eventually(t, 20*time.Second, "reverted", func() bool {
		show = h.run("proposal", "show", id)
		return strings.Contains(show.stdout, "status     reverted")
	})
	last := -1
	for _, state := range []string{"\n  pending ", "\n  approved ", "\n  applied ", "\n  reverted "} {
		at := strings.Index(show.stdout, state)
		if at < last {
			t.Fatalf("proposal show lacks %q in order:\n%s", strings.TrimSpace(state), show.stdout)
		}
		last = at
	}
	if !strings.Contains(show.stdout, "outcome    after 80% errors (4 of 5) against 50% errors (3 of 6) (threshold +25%)") ||
		!strings.Contains(show.stdout, "worse by more than 25%") {
		t.Errorf("proposal show:\n%s", show.stdout)
	}
	t.Logf("proposal show:\n%s", show.stdout)
}
