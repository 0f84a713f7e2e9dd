package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
)

// bigSteps is n shell steps whose commands are 10 KiB each.
func bigSteps(n int) []event.Step {
	var out []event.Step
	for i := range n {
		out = append(out, event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell,
			Run: fmt.Sprintf("echo %d %s", i, strings.Repeat("x", 10<<10))})
	}
	return out
}

// checkSizes fails the test when a decision's payload is larger than an
// event may carry: the outbox would refuse it, and every decision emitted
// with it, at every Decide.
func checkSizes(t *testing.T, ds []Decision) {
	t.Helper()
	for _, d := range ds {
		if len(d.Draft.Data) > envelope.MaxEventBytes {
			t.Fatalf("%s decision of %d bytes; an event may carry %d", d.Draft.Type, len(d.Draft.Data), envelope.MaxEventBytes)
		}
	}
}

// TestReplanRequestFitsAnEvent: a request for the next revision of an
// open plan whose results (2 KiB output tails) and plan (600 KiB) would
// not fit in one event is sent with the tails left out; an open plan too
// large to send at all fails its run with budget_exceeded, saying so; so
// does a replan after a failure. No decision is larger than an event.
func TestReplanRequestFitsAnEvent(t *testing.T) {
	drive := func(steps []event.Step, open bool, failLast bool) []Decision {
		f := newFixture(t)
		f.online("n1", 1, 0)
		f.add(event.GoalSubmitted, "r", "op", event.GoalSubmittedData{Goal: "r", Text: "big"})
		f.add(event.PlanProposed, "r", "planner", event.PlanProposedData{Revision: 1, Source: "llm", Plan: event.Plan{Steps: steps, Open: open}})
		f.add(event.PlanAccepted, "r", "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
		now := t0
		for i, st := range steps {
			now = now.Add(time.Second)
			status, exit := event.TaskSucceeded, 0
			if failLast && i == len(steps)-1 {
				status, exit = event.TaskFailed, 1
			}
			f.runStep("r", st.ID, now, status, exit, strings.Repeat("o", 4<<10))
		}
		ds := f.decide(now.Add(time.Second))
		checkSizes(t, ds)
		return ds
	}

	var req event.PlanReplanRequestedData
	ds := drive(bigSteps(60), true, false)
	only(t, ds, event.PlanReplanRequested, &req)
	if len(req.Plan.Steps) != 60 || len(req.Results) != 60 || req.Results[59].OutputTail != "" || req.Results[59].Status != event.StepStatus(StepSucceeded) {
		t.Fatalf("next request: %d steps, %d results, the last %+v", len(req.Plan.Steps), len(req.Results), req.Results[len(req.Results)-1])
	}
	small := drive(bigSteps(3), true, false)
	only(t, small, event.PlanReplanRequested, &req)
	if req.Results[2].OutputTail == "" {
		t.Fatal("a request that fits lost its output tails")
	}

	for _, open := range []bool{true, false} {
		steps := bigSteps(64)
		steps[63].OnFailure = event.OnFailureReplan
		ds := drive(steps, open, !open)
		fin := finished(t, ds)
		if fin.Code != string(CodeBudgetExceeded) || !strings.Contains(fin.Reason, "too large to send to the planner for revision 2") {
			b, _ := json.Marshal(ds)
			t.Fatalf("open %v: a plan too large to send: %+v (decisions %.300s)", open, fin, b)
		}
	}
}

// TestCritiqueHugeJudgementIsBounded: a verdict whose judgement runs to
// 600 KiB (a planner that did not cut it) fails the critique step with
// the judgement cut, and the run's end fits in an event.
func TestCritiqueHugeJudgementIsBounded(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 1, 0)
	f.add(event.GoalSubmitted, "r", "op", event.GoalSubmittedData{Goal: "r"})
	f.add(event.PlanProposed, "r", "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
		{ID: "a", Kind: event.KindShell, Run: "echo hello"},
		{ID: "c", Kind: event.KindCritique, Target: "a", Criteria: "says hello", DependsOn: []string{"a"}},
	}}})
	f.add(event.PlanAccepted, "r", "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
	now := t0.Add(time.Second)
	f.runStep("r", "a", now, event.TaskSucceeded, 0, "hello")
	var req event.CritiqueRequestedData
	only(t, f.decide(now), event.CritiqueRequested, &req)
	f.add(event.PlanClaimed, "r", "planner", event.PlanClaimedData{Until: now.Add(time.Minute), Step: "c", Attempt: req.Attempt})
	f.add(event.CritiqueRecorded, "r", "planner", event.CritiqueRecordedData{Step: "c", Attempt: req.Attempt,
		Verdict: event.VerdictFail, Judgement: strings.Repeat("no. ", 150<<10)})
	if st := f.step("r", "c"); st.Status != StepFailed || len(st.Error) > 2*maxJudgement || len(st.Critique.Judgement) > maxJudgement+3 {
		t.Fatalf("critique step %s, error of %d bytes, judgement of %d", st.Status, len(st.Error), len(st.Critique.Judgement))
	}
	ds := f.decide(now)
	checkSizes(t, ds)
	if fin := finished(t, ds); fin.Code != string(CodeStepFailed) || !strings.Contains(fin.Reason, "critique of a failed: no. no.") {
		t.Fatalf("run end %+v", fin)
	}
}

// TestCritiqueRequestFitsAnEvent: a critique of a step whose report
// carried a 600 KiB output tail, in a run whose goal text is 600 KiB,
// is asked for with both cut (the end of the output, the start of the
// goal): the request fits in one event.
func TestCritiqueRequestFitsAnEvent(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 1, 0)
	f.add(event.GoalSubmitted, "r", "op", event.GoalSubmittedData{Goal: "r", Text: "goal " + strings.Repeat("g", 600<<10)})
	f.add(event.PlanProposed, "r", "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
		{ID: "a", Kind: event.KindShell, Run: "echo hello"},
		{ID: "c", Kind: event.KindCritique, Target: "a", Criteria: "says hello", DependsOn: []string{"a"}},
	}}})
	f.add(event.PlanAccepted, "r", "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
	now := t0.Add(time.Second)
	f.runStep("r", "a", now, event.TaskSucceeded, 0, strings.Repeat("o", 600<<10)+" hello")
	ds := f.decide(now)
	checkSizes(t, ds)
	var req event.CritiqueRequestedData
	only(t, ds, event.CritiqueRequested, &req)
	if !strings.HasSuffix(req.Output, "o hello") || !strings.HasPrefix(req.Goal, "goal g") || len(req.Output) > maxCritiqueText+3 || len(req.Goal) > maxCritiqueText+3 {
		t.Fatalf("request with output of %d bytes, goal of %d", len(req.Output), len(req.Goal))
	}
}

// TestRunEndReasonFitsAnEvent: a step whose report carries a 700 KiB
// error fails its run with the reason cut: the run's end fits in an
// event (the outbox would refuse it, and the run would never end).
func TestRunEndReasonFitsAnEvent(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 1, 0)
	f.add(event.GoalSubmitted, "r", "op", event.GoalSubmittedData{Goal: "r"})
	f.add(event.PlanProposed, "r", "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
		{ID: "a", Kind: event.KindShell, Run: "false"}}}})
	f.add(event.PlanAccepted, "r", "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
	now := t0.Add(time.Second)
	var a event.TaskAssignedData
	only(t, f.decide(now), event.TaskAssigned, &a)
	f.add(event.TaskFinished, "r", a.Node, event.TaskFinishedData{Step: "a", Attempt: a.Attempt, Node: a.Node,
		Status: event.TaskFailed, Class: event.ClassLogic, ExitCode: 1, Error: "broke: " + strings.Repeat("e", 700<<10)})
	ds := f.decide(now)
	checkSizes(t, ds)
	if fin := finished(t, ds); fin.Code != string(CodeStepFailed) || !strings.HasPrefix(fin.Reason, "step a failed: broke: eee") || !strings.HasSuffix(fin.Reason, "...") {
		t.Fatalf("run end %s [%s] with a reason of %d bytes", fin.Status, fin.Code, len(fin.Reason))
	}
}

// TestMaxEventBytesIsTheEnvelopes: the core's copy of the most an event
// may carry is the envelope's.
func TestMaxEventBytesIsTheEnvelopes(t *testing.T) {
	if MaxEventBytes != envelope.MaxEventBytes {
		t.Fatalf("core.MaxEventBytes = %d, envelope.MaxEventBytes = %d: make them equal", MaxEventBytes, envelope.MaxEventBytes)
	}
}
