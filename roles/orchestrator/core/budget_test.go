package core

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// budgetFixture is a fixture whose policy holds budgets (policy text).
func budgetFixture(t *testing.T, budgets string) *fixture {
	t.Helper()
	f := &fixture{t: t, s: NewState()}
	f.s.Apply(policyApplied(0, []byte("default: allow\nbudgets: "+budgets+"\n")))
	f.add(event.LeaderElected, "", "o1", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"})
	f.online("n1", 4, 0)
	return f
}

func finished(t *testing.T, ds []Decision) event.RunFinishedData {
	t.Helper()
	for _, d := range ds {
		if d.Draft.Type == event.RunFinished {
			var fin event.RunFinishedData
			if err := json.Unmarshal(d.Draft.Data, &fin); err != nil {
				t.Fatal(err)
			}
			return fin
		}
	}
	return event.RunFinishedData{}
}

// TestBudgets: a plan with more steps than budgets.steps fails before any
// step runs; a run still going at budgets.run_time is stopped (its running
// step cancelled, the run failed), and Decide wakes at the deadline.
func TestBudgets(t *testing.T) {
	a := event.Step{ID: "a", Kind: event.KindShell, Run: "make"}
	b := event.Step{ID: "b", Kind: event.KindShell, Run: "make test", DependsOn: []string{"a"}}

	f := budgetFixture(t, "{steps: 1}")
	f.run("r", a, b)
	ds := f.decide(t0.Add(time.Second))
	if fin := finished(t, ds); fin.Status != event.RunFailed || fin.Code != string(CodeBudgetExceeded) || fin.Reason == "" {
		t.Fatalf("steps budget: %+v in %v", fin, ds)
	}
	for _, d := range ds {
		if d.Draft.Type == event.TaskAssigned {
			t.Fatalf("a step was assigned in a run over its steps budget: %v", ds)
		}
	}

	f = budgetFixture(t, "{run_time: 10s}")
	f.run("r", a, b)
	ds, wake := Decide(f.s, t0.Add(time.Second), 1, nil)
	if len(ds) != 1 || ds[0].Draft.Type != event.TaskAssigned || !wake.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("within the budget: %v, wake %v", ds, wake)
	}
	f.decide(t0.Add(time.Second))
	f.add(event.TaskStarted, "r", "n1", event.TaskStartedData{Step: "a", Attempt: 1})
	ds = f.decide(t0.Add(11 * time.Second))
	if len(ds) != 2 || ds[0].Draft.Type != event.TaskCancel {
		t.Fatalf("past the run time: %v, want the running step cancelled and the run finished", ds)
	}
	if fin := finished(t, ds); fin.Status != event.RunFailed || fin.Code != string(CodeBudgetExceeded) {
		t.Fatalf("run time budget: %+v in %v", fin, ds)
	}
}
