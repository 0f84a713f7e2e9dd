package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// reactRun starts run id planned a step at a time: revision 1 holds
// step first and is open.
func reactRun(f *fixture, id string, first event.Step) {
	f.add(event.GoalSubmitted, id, "op", event.GoalSubmittedData{Goal: id, Text: "find out " + id})
	f.add(event.PlanProposed, id, "planner", event.PlanProposedData{Revision: 1, Source: "llm", Plan: event.Plan{Steps: []event.Step{first}, Open: true}})
	f.add(event.PlanAccepted, id, "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
}

// only returns the single decision of ds, of type typ, decoded into v.
func only(t *testing.T, ds []Decision, typ event.Type, v any) {
	t.Helper()
	if len(ds) != 1 || ds[0].Draft.Type != typ {
		t.Fatalf("decisions %v, want one %s", ds, typ)
	}
	if v != nil {
		if err := json.Unmarshal(ds[0].Draft.Data, v); err != nil {
			t.Fatal(err)
		}
	}
}

// runStep assigns step id of run (the one decision Decide makes), and
// folds its end with status, exit code and output.
func (f *fixture) runStep(run, id string, now time.Time, status event.TaskStatus, exit int, out string) {
	f.t.Helper()
	var a event.TaskAssignedData
	only(f.t, f.decide(now), event.TaskAssigned, &a)
	if a.Step.ID != id {
		f.t.Fatalf("assigned %s, want %s", a.Step.ID, id)
	}
	d := event.TaskFinishedData{Step: id, Attempt: a.Attempt, Node: a.Node, Status: status, ExitCode: exit, OutputTail: out}
	if status == event.TaskFailed {
		d.Error, d.Class = fmt.Sprintf("exit code %d", exit), event.ClassLogic
	}
	f.add(event.TaskFinished, run, a.Node, d)
}

// propose folds revision rev of run's plan.
func (f *fixture) propose(run string, rev int, open bool, steps ...event.Step) {
	f.add(event.PlanProposed, run, "planner", event.PlanProposedData{Revision: rev, Replaces: rev - 1, Source: "llm",
		Plan: event.Plan{Steps: steps, Open: open}})
}

// TestReactRunPlannedAStepAtATime: when every step of an open plan is
// final, the leader asks for the next revision with the steps' results
// (outputs of succeeded steps included) instead of finishing the run; a
// step that failed with on_failure continue is kept as it is, not run
// again; the replans budget is untouched; a revision that is not open
// ends the run once its steps are final.
func TestReactRunPlannedAStepAtATime(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 2, 0)
	a := event.Step{ID: "look", Kind: event.KindShell, Run: "ls /srv"}
	b := event.Step{ID: "probe", Kind: event.KindShell, Run: "cat /srv/app.conf", DependsOn: []string{"look"}, OnFailure: event.OnFailureContinue}
	c := event.Step{ID: "fix", Kind: event.KindShell, Run: "touch /tmp/app.conf", DependsOn: []string{"probe"}}
	reactRun(f, "r", a)

	f.runStep("r", "look", t0.Add(time.Second), event.TaskSucceeded, 0, "app\n")
	var req event.PlanReplanRequestedData
	only(t, f.decide(t0.Add(2*time.Second)), event.PlanReplanRequested, &req)
	if req.Reason != event.ReplanNext || req.Revision != 1 || req.Replans != 0 || !req.Plan.Open || req.Goal.Text != "find out r" ||
		len(req.Results) != 1 || req.Results[0] != (event.StepResult{Step: "look", Status: event.StepSucceeded, OutputTail: "app\n"}) ||
		strings.Join(req.Done, ",") != "look" {
		t.Fatalf("next request %+v", req)
	}
	if ds := f.decide(t0.Add(3 * time.Second)); len(ds) != 0 {
		t.Fatalf("asked twice: %v", ds)
	}
	if why := f.s.Runs["r"].ShownReason(); why != "waiting for the next steps (plan revision 2) from the planner" {
		t.Fatalf("reason shown while waiting: %q", why)
	}

	f.propose("r", 2, true, a, b)
	only(t, f.decide(t0.Add(4*time.Second)), event.PlanAccepted, nil)
	f.runStep("r", "probe", t0.Add(5*time.Second), event.TaskFailed, 1, "no such file\n")
	only(t, f.decide(t0.Add(6*time.Second)), event.PlanReplanRequested, &req)
	if req.Revision != 2 || req.Replans != 0 || len(req.Results) != 2 ||
		req.Results[1] != (event.StepResult{Step: "probe", Status: event.StepFailed, ExitCode: 1, Reason: "exit code 1", OutputTail: "no such file\n"}) {
		t.Fatalf("second next request %+v", req)
	}

	f.propose("r", 3, false, a, b, c)
	only(t, f.decide(t0.Add(7*time.Second)), event.PlanAccepted, nil)
	if st := f.step("r", "probe"); st.Status != StepFailed || st.Attempt != 1 {
		t.Fatalf("the failed step kept: %+v", st)
	}
	f.runStep("r", "fix", t0.Add(8*time.Second), event.TaskSucceeded, 0, "")
	var fin event.RunFinishedData
	only(t, f.decide(t0.Add(9*time.Second)), event.RunFinished, &fin)
	if fin.Status != event.RunSucceeded || f.s.Runs["r"] != nil && f.s.Runs["r"].Replans != 0 {
		t.Fatalf("finished %+v", fin)
	}
}

// TestReactFailureReplanInsideOpenPlan: a step of an open plan that fails
// with on_failure replan asks for a revision for the failure (counted
// against the replans budget), and the open revision goes on.
func TestReactFailureReplanInsideOpenPlan(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 1, 0)
	a := event.Step{ID: "build", Kind: event.KindShell, Run: "make", OnFailure: event.OnFailureReplan}
	reactRun(f, "r", a)
	f.runStep("r", "build", t0.Add(time.Second), event.TaskFailed, 2, "missing dep\n")
	var req event.PlanReplanRequestedData
	only(t, f.decide(t0.Add(2*time.Second)), event.PlanReplanRequested, &req)
	if req.Reason == event.ReplanNext || req.Replans != 1 || req.Failure.Step != "build" {
		t.Fatalf("failure request %+v", req)
	}
	fixed := event.Step{ID: "build", Kind: event.KindShell, Run: "make deps all"}
	f.propose("r", 2, true, fixed)
	only(t, f.decide(t0.Add(3*time.Second)), event.PlanAccepted, nil)
	f.runStep("r", "build", t0.Add(4*time.Second), event.TaskSucceeded, 0, "ok\n")
	only(t, f.decide(t0.Add(5*time.Second)), event.PlanReplanRequested, &req)
	if req.Reason != event.ReplanNext || req.Revision != 2 || req.Replans != 1 {
		t.Fatalf("next request after the failure's revision %+v", req)
	}
	// The planner cannot go on: the run fails with its reason.
	f.add(event.PlanRejected, "r", "planner", event.PlanRejectedData{Error: "the token budget is spent"})
	var fin event.RunFinishedData
	only(t, f.decide(t0.Add(6*time.Second)), event.RunFinished, &fin)
	if fin.Status != event.RunFailed || fin.Code != string(CodePlanRejected) || !strings.Contains(fin.Reason, "token budget") {
		t.Fatalf("finished %+v", fin)
	}
}

// TestReactBounds: a model that never closes its plan is stopped by
// budgets.steps, and without budgets by MaxOpenRevisions.
func TestReactBounds(t *testing.T) {
	steps := func(n int) []event.Step {
		var out []event.Step
		for i := range n {
			out = append(out, event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell, Run: fmt.Sprintf("echo %d", i)})
		}
		return out
	}
	loop := func(f *fixture, until int) event.RunFinishedData {
		now := t0
		reactRun(f, "r", steps(1)[0])
		for rev := 1; rev <= until; rev++ {
			now = now.Add(time.Second)
			if ds, _ := Decide(f.s, now, 1, nil); finished(t, ds).Status != "" {
				return finished(t, ds)
			}
			f.runStep("r", fmt.Sprintf("s%d", rev-1), now, event.TaskSucceeded, 0, "")
			ds := f.decide(now)
			if fin := finished(t, ds); fin.Status != "" {
				return fin
			}
			only(t, ds, event.PlanReplanRequested, nil)
			f.propose("r", rev+1, true, steps(rev+1)...)
			ds = f.decide(now)
			if fin := finished(t, ds); fin.Status != "" {
				return fin
			}
			only(t, ds, event.PlanAccepted, nil)
		}
		t.Fatalf("the run went on past revision %d", until)
		return event.RunFinishedData{}
	}

	f := budgetFixture(t, "{steps: 3}")
	if fin := loop(f, 10); fin.Code != string(CodeBudgetExceeded) || !strings.Contains(fin.Reason, "budgets.steps") || f.s.Runs["r"] != nil && f.s.Runs["r"].Revision != 4 {
		t.Fatalf("steps budget: %+v", fin)
	}

	f = newFixture(t)
	f.online("n1", 1, 0)
	if fin := loop(f, MaxOpenRevisions+1); fin.Code != string(CodeBudgetExceeded) || !strings.Contains(fin.Reason, "still open after 50 revisions") {
		t.Fatalf("revision cap: %+v", fin)
	}
}
