package core

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// retiredRun drives a run whose plan edits w1 and w2 and then runs t,
// which fails and asks for a replan; revision 2 (steps) is proposed and
// the run driven to its end, where t2 fails.
func retiredRun(t *testing.T, rev2 ...event.Step) (*comp, *Run) {
	t.Helper()
	c := newComp(t, write("w1"), write("w2", "w1"),
		event.Step{ID: "t", Kind: event.KindShell, Run: "false", DependsOn: []string{"w2"}, OnFailure: event.OnFailureReplan})
	c.outcome = func(a event.TaskAssignedData) *event.TaskFinishedData {
		if a.Step.ID == "t2" || (a.Step.ID == "t" && a.Attempt == 1) {
			return &event.TaskFinishedData{Status: event.TaskFailed, ExitCode: 1, Error: "exit code 1", Class: event.ClassLogic}
		}
		return succeedAll("")(a)
	}
	for range 20 {
		c.decide()
		if r := c.s.Runs["r1"]; r != nil && r.Replanning != nil {
			break
		}
		c.work()
	}
	if r := c.s.Runs["r1"]; r == nil || r.Replanning == nil {
		t.Fatalf("no replan:\n%s", dumpRun(r))
	}
	c.add(event.PlanProposed, "r1", "planner", event.PlanProposedData{Revision: 2, Replaces: 1, Source: "llm", Plan: event.Plan{Steps: rev2}})
	return c, c.drive()
}

// undone lists the attempts compensated, in the order of their
// compensations' assignments: "step#attempt".
func undone(c *comp) []string {
	var out []string
	for _, a := range c.assigned {
		if a.Compensates != nil && a.Attempt == 1 {
			out = append(out, a.Compensates.Step+"#"+strconv.Itoa(a.Compensates.Attempt))
		}
	}
	return out
}

// TestRevisionDroppedEditIsCompensated: a file edit that succeeded and
// that revision 2 leaves out is still undone when the run fails later,
// in reverse order of the ends.
func TestRevisionDroppedEditIsCompensated(t *testing.T) {
	c, r := retiredRun(t, write("w1"), event.Step{ID: "t2", Kind: event.KindShell, Run: "false"})
	if got := undone(c); !slices.Equal(got, []string{"w2#1", "w1#1"}) {
		t.Fatalf("compensated %v, want w2#1 then w1#1\n%s", got, dumpRun(r))
	}
	if r.Status != RunFailed || !strings.HasSuffix(r.Reason, "compensated: w2, w1") {
		t.Fatalf("run %s %q", r.Status, r.Reason)
	}
	// The retired step is not part of the plan in force.
	for _, st := range r.Steps {
		if st.Compensates == nil && st.Spec.ID == "w2" {
			t.Fatalf("w2 in the plan of revision 2:\n%s", dumpRun(r))
		}
	}
}

// TestRevisionReplacedEditIsCompensated: a succeeded edit whose spec a
// revision changes runs again as a new attempt; both attempts are undone,
// the later first, so the file goes back to before the first.
func TestRevisionReplacedEditIsCompensated(t *testing.T) {
	w2 := write("w2", "w1")
	w2.Content = "changed"
	c, r := retiredRun(t, write("w1"), w2, event.Step{ID: "t2", Kind: event.KindShell, Run: "false", DependsOn: []string{"w2"}})
	if got := undone(c); !slices.Equal(got, []string{"w2#2", "w2#1", "w1#1"}) {
		t.Fatalf("compensated %v, want w2#2, w2#1, w1#1\n%s", got, dumpRun(r))
	}
	if r.Status != RunFailed || !strings.HasSuffix(r.Reason, "compensated: w2, w2, w1") {
		t.Fatalf("run %s %q", r.Status, r.Reason)
	}
}

// TestRetiredStepsSurviveASnapshot: a leader restored from a snapshot
// taken after the revision still undoes the dropped edit.
func TestRetiredStepsSurviveASnapshot(t *testing.T) {
	c := newComp(t, write("w1"), event.Step{ID: "t", Kind: event.KindShell, Run: "false", DependsOn: []string{"w1"}, OnFailure: event.OnFailureReplan})
	c.outcome = succeedAll("t")
	for range 20 {
		c.decide()
		if r := c.s.Runs["r1"]; r != nil && r.Replanning != nil {
			break
		}
		c.work()
	}
	c.add(event.PlanProposed, "r1", "planner", event.PlanProposedData{Revision: 2, Replaces: 1, Source: "llm",
		Plan: event.Plan{Steps: []event.Step{{ID: "t2", Kind: event.KindShell, Run: "false"}}}})
	c.decide() // accepts revision 2
	if r := c.s.Runs["r1"]; r == nil || r.Revision != 2 || len(r.Retired) != 1 {
		t.Fatalf("after the revision:\n%s", dumpRun(r))
	}
	b, err := c.s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if c.s, err = UnmarshalSnapshot(b); err != nil {
		t.Fatal(err)
	}
	c.outcome = succeedAll("t2")
	r := c.drive()
	if got := undone(c); !slices.Equal(got, []string{"w1#1"}) || !strings.HasSuffix(r.Reason, "compensated: w1") {
		t.Fatalf("compensated %v, run %q", got, r.Reason)
	}
}
