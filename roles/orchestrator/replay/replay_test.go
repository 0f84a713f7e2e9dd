package replay_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
)

// history runs two plans on a real node — one with a retried failure and a
// failure routed to continue, one that fails — and returns the node and
// the first run's id. The first goal is as older submitters send it (the
// file alone: a planner proposes its plan), the second carries its plan
// (the leader plans it from the goal, and the planner's proposal comes
// too): one ledger holds both ways.
func history(t *testing.T) (*nodetest.Node, string) {
	t.Helper()
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	return n, runHistory(t, n, n.Submit, n.SubmitPlanned)
}

// runHistory runs history's two plans on n, submitted by first and
// second, and returns the first run's id.
func runHistory(t *testing.T, n *nodetest.Node, first, second func(testing.TB, string, string) string) string {
	t.Helper()
	marker := t.TempDir() + "/once"
	run := first(t, "mixed.yaml", `goal: mixed
steps:
  - id: start
    kind: noop
  - id: flaky
    run: test -e `+marker+` || { touch `+marker+`; exit 3; }
    retries: 2
    backoff: 10ms
    on_failure: retry
    depends_on: [start]
  - id: fan-1
    run: echo one
    depends_on: [start]
  - id: fan-2
    run: exit 4
    on_failure: continue
    depends_on: [start]
  - id: join
    run: echo joined
    depends_on: [flaky, fan-1, fan-2]
`)
	other := second(t, "fails.yaml", "goal: fails\nsteps:\n  - id: a\n    run: exit 2\n  - id: b\n    run: echo never\n    depends_on: [a]\n")
	if r := n.WaitRun(t, run, 30*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	if r := n.WaitRun(t, other, 30*time.Second); r.Status != event.RunFailed {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	waitEnd(t, n, run)
	waitEnd(t, n, other)
	return run
}

// TestReplayOfRunsPlannedByTheirGoal: on a node without a planner, goals
// that carry their plan run all the same — the leader plans them from the
// goal — and a replay of that ledger reproduces every decision.
func TestReplayOfRunsPlannedByTheirGoal(t *testing.T) {
	cfg := nodetest.Config(t.TempDir())
	cfg.Roles = []string{event.RoleOrchestrator, event.RoleExecutor}
	n := nodetest.Start(t, cfg)
	run := runHistory(t, n, n.SubmitPlanned, n.SubmitPlanned)
	for ev, err := range n.API.Events(context.Background(), 0, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == event.PlanProposed || ev.Type == event.PlanClaimed {
			t.Fatalf("%s of run %s on a node without a planner", ev.Type, ev.Run)
		}
	}
	rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged() || rep.Checked < 10 || rep.Reproduced != rep.Checked {
		b, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("run %s: %s", run, b)
	}
}

func TestReplayReproducesRecordedDecisions(t *testing.T) {
	n, run := history(t)
	for _, only := range []string{run, ""} {
		rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: only})
		if err != nil {
			t.Fatal(err)
		}
		// accepted, 6 assignments (flaky twice), run.finished at least.
		if rep.Diverged() || rep.Checked < 8 || rep.Reproduced != rep.Checked {
			b, _ := json.MarshalIndent(rep, "", "  ")
			t.Fatalf("run %q: %s", only, b)
		}
		if only == run && rep.Finished != event.RunSucceeded {
			t.Fatalf("finished = %q", rep.Finished)
		}
	}
}

func TestReplayReportsChangedScheduling(t *testing.T) {
	n, run := history(t)
	// A "deliberate change to the scheduling code": assignments carry
	// another reason, and runs never finish.
	changed := func(s *core.State, now time.Time, epoch uint64, inflight map[core.DecisionKey]bool) ([]core.Decision, time.Time) {
		ds, wake := core.Decide(s, now, epoch, inflight)
		ds = slices.DeleteFunc(ds, func(d core.Decision) bool { return d.Draft.Type == event.RunFinished })
		for i := range ds {
			if ds[i].Draft.Type == event.TaskAssigned {
				var a event.TaskAssignedData
				_ = json.Unmarshal(ds[i].Draft.Data, &a)
				a.Reason = "changed"
				ds[i].Draft.Data, _ = json.Marshal(a)
			}
		}
		return ds, wake
	}
	rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: run, Decide: changed})
	if err != nil {
		t.Fatal(err)
	}
	var missing, differ int
	for _, d := range rep.Divergences {
		switch {
		case d.Type == event.RunFinished && d.Now == nil:
			missing++
		case d.Type == event.TaskAssigned && d.Now != nil:
			differ++
		default:
			t.Errorf("unexpected divergence %+v", d)
		}
	}
	if missing != 1 || differ != 6 {
		t.Fatalf("%d run.finished missing, %d assignments differ; report %+v", missing, differ, rep)
	}
}
