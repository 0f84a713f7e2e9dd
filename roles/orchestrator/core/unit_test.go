package core

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func TestBackoff(t *testing.T) {
	tests := []struct {
		base     time.Duration
		attempt  int
		min, max time.Duration
	}{
		{0, 1, 800 * time.Millisecond, 1200 * time.Millisecond},
		{0, 2, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{2 * time.Second, 1, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{2 * time.Second, 3, 6400 * time.Millisecond, 9600 * time.Millisecond},
		{time.Minute, 4, 4 * time.Minute, MaxBackoff},
		{time.Second, 1000, 4 * time.Minute, MaxBackoff},
		{time.Hour, 1, 4 * time.Minute, MaxBackoff},
	}
	for _, tt := range tests {
		step := event.Step{ID: "s", Backoff: event.Duration(tt.base)}
		seen := map[time.Duration]bool{}
		for _, run := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
			d := Backoff(run, step, tt.attempt)
			if d < tt.min || d > tt.max {
				t.Errorf("Backoff(%s, base %v, attempt %d) = %v, want in [%v, %v]", run, tt.base, tt.attempt, d, tt.min, tt.max)
			}
			if d2 := Backoff(run, step, tt.attempt); d2 != d {
				t.Errorf("Backoff not deterministic: %v then %v", d, d2)
			}
			seen[d] = true
		}
		if len(seen) < 2 && tt.base < time.Minute {
			t.Errorf("base %v attempt %d: no jitter across runs: %v", tt.base, tt.attempt, seen)
		}
	}
	// Pinned value: changing the formula changes every node's replay.
	if got, want := Backoff("r1", event.Step{ID: "a", Backoff: event.Duration(2 * time.Second)}, 1), 1930*time.Millisecond; got != want {
		t.Errorf("Backoff pinned value = %v, want %v", got, want)
	}
}

func TestRetryable(t *testing.T) {
	fail := func(class event.FailureClass, err string, attempt int) event.TaskFinishedData {
		return event.TaskFinishedData{Status: event.TaskFailed, Class: class, Error: err, Attempt: attempt, ExitCode: 3}
	}
	noExit := func(d event.TaskFinishedData) event.TaskFinishedData { d.ExitCode = -1; return d }
	timed := func(d event.TaskFinishedData) event.TaskFinishedData { d.TimedOut = true; return noExit(d) }
	intr := func(d event.TaskFinishedData) event.TaskFinishedData { d.Interrupted = true; return noExit(d) }
	timedOut := event.TaskFinishedData{Status: event.TaskFailed, TimedOut: true, Attempt: 1, ExitCode: -1}
	tests := []struct {
		name       string
		spec       event.Step
		d          event.TaskFinishedData
		wantRetry  bool
		wantCode   Code
		wantReason string
	}{
		{"transient within retries", event.Step{Retries: 2}, noExit(fail(event.ClassTransient, "wait: x", 2)), true, CodeTransientError, "wait: x"},
		{"transient exhausted", event.Step{Retries: 2}, noExit(fail(event.ClassTransient, "wait: x", 3)), false, CodeTransientError, "wait: x"},
		{"policy never", event.Step{Retries: 5, OnFailure: event.OnFailureRetry}, fail(event.ClassPolicy, "denied", 1), false, CodePolicyDenied, "denied"},
		{"logic abort", event.Step{Retries: 5}, fail(event.ClassLogic, "", 1), false, CodeExitNonzero, "exit code 3"},
		{"logic retry", event.Step{Retries: 1, OnFailure: event.OnFailureRetry}, fail(event.ClassLogic, "", 1), true, CodeExitNonzero, "exit code 3"},
		{"logic retry exhausted", event.Step{Retries: 1, OnFailure: event.OnFailureRetry}, fail(event.ClassLogic, "", 2), false, CodeExitNonzero, "exit code 3"},
		{"logic without exit code", event.Step{}, noExit(fail(event.ClassLogic, "empty command", 1)), false, CodeLogicError, "empty command"},
		{"unclassified is logic", event.Step{Retries: 1}, fail("", "", 1), false, CodeExitNonzero, "exit code 3"},
		{"timed out", event.Step{Retries: 1}, timed(fail(event.ClassTransient, "timed out after 1s", 2)), false, CodeTimedOut, "timed out after 1s"},
		{"unclassified timeout is transient", event.Step{Retries: 1}, timedOut, true, CodeTimedOut, "exit code -1"},
		{"interrupted idempotent", event.Step{Retries: 1, Idempotent: true}, intr(fail(event.ClassTransient, "interrupted: x", 1)), true, CodeInterrupted, "interrupted: x"},
		{"interrupted idempotent, one more", event.Step{Retries: 1, Idempotent: true}, intr(fail(event.ClassTransient, "interrupted: x", 2)), true, CodeInterrupted, "interrupted: x"},
		{"interrupted idempotent, spent", event.Step{Retries: 1, Idempotent: true}, intr(fail(event.ClassTransient, "interrupted: x", 3)), false, CodeInterrupted, "interrupted: x"},
		{"interrupted not idempotent", event.Step{Retries: 1}, intr(fail(event.ClassTransient, "interrupted: x", 1)), false, CodeInterruptedNotIdempotent, ReasonNotIdempotent},
		{"interrupted without text", event.Step{Retries: 1}, intr(fail(event.ClassTransient, "", 1)), false, CodeInterruptedNotIdempotent, ReasonNotIdempotent},
		{"interrupted policy is policy", event.Step{Retries: 1}, intr(fail(event.ClassPolicy, "interrupted: x", 1)), false, CodePolicyDenied, "interrupted: x"},
		{"the text alone is no interruption", event.Step{Retries: 1}, noExit(fail(event.ClassTransient, "interrupted: x", 1)), true, CodeTransientError, "interrupted: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			retry, code, reason := retryable(tt.spec, tt.d)
			if retry != tt.wantRetry || code != tt.wantCode || reason != tt.wantReason {
				t.Fatalf("retryable = %v %s %q, want %v %s %q", retry, code, reason, tt.wantRetry, tt.wantCode, tt.wantReason)
			}
		})
	}
}

// TestDecisionKeys: keys are compared field by field, never through a
// string encoding, so no two decisions are one whatever their ids hold
// (their String, for people, may coincide); String keeps the shape logs
// and golden scripts show.
func TestDecisionKeys(t *testing.T) {
	a := assignKey("r", "a/1", 2, "n")
	b := assignKey("r/a", "1", 2, "n")
	if a == b || a.String() != b.String() {
		t.Fatalf("keys %#v and %#v: equal %v, strings %q %q", a, b, a == b, a.String(), b.String())
	}
	inflight := map[DecisionKey]bool{a: true}
	if inflight[b] || !inflight[assignKey("r", "a/1", 2, "n")] {
		t.Fatal("map lookup by key does not compare fields")
	}
	for k, want := range map[DecisionKey]string{
		acceptKey("r1", 3):                       "accept/r1/3",
		assignKey("r1", "build/linux", 12, "n7"): "assign/r1/build/linux/12/n7",
		cancelKey("r1", "s", 2):                  "cancel/r1/s/2",
		finishKey("r1"):                          "finish/r1",
	} {
		if k.String() != want {
			t.Errorf("%#v.String() = %q, want %q", k, k.String(), want)
		}
	}
	if acceptKey("r1", 1) == acceptKey("r1", 2) || cancelKey("r", "s", 1) == (DecisionKey{Kind: KindAssign, Run: "r", Step: "s", Attempt: 1}) {
		t.Error("keys of other revisions or kinds are equal")
	}
}

// TestInflightAssignmentIsPerStep: an assignment in flight for step
// "build.linux" holds a slot and suppresses that step's assignment only,
// not that of step "build".
func TestInflightAssignmentIsPerStep(t *testing.T) {
	var l ledger
	s := policied()
	p := event.Plan{Steps: []event.Step{{ID: "build.linux", Kind: event.KindNoop}, {ID: "build", Kind: event.KindNoop}}}
	s.Apply(l.add(event.ExecutorOnline, "", "n1", t0, event.ExecutorOnlineData{Slots: 2}))
	s.Apply(l.add(event.LeaderElected, "", "o", t0, event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o"}))
	s.Apply(l.add(event.GoalSubmitted, "r", "op", t0, event.GoalSubmittedData{Goal: "g"}))
	s.Apply(l.add(event.PlanProposed, "r", "p", t0, event.PlanProposedData{Revision: 1, Plan: p}))
	s.Apply(l.add(event.PlanAccepted, "r", "o", t0, event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1}))
	ds, _ := Decide(s, t0, 1, map[DecisionKey]bool{testAssignKey("r", "build.linux", 1, "n1"): true})
	if len(ds) != 1 || ds[0].Key != testAssignKey("r", "build", 1, "n1") {
		t.Fatalf("decisions %+v, want only build's assignment", ds)
	}
	// Both slots are taken: n1's one free slot went to build, the other is
	// held by the assignment in flight.
	ds, _ = Decide(s, t0, 1, map[DecisionKey]bool{testAssignKey("r", "build.linux", 1, "n1"): true, ds[0].Key: true})
	if len(ds) != 0 {
		t.Fatalf("decisions %+v with both assignments in flight", ds)
	}
}

func TestRunLookup(t *testing.T) {
	var l ledger
	s := policied()
	for _, id := range []string{"0190aa", "0190ab", "0200zz"} {
		s.Apply(l.add(event.GoalSubmitted, id, "op", t0, event.GoalSubmittedData{Goal: id}))
	}
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"0190aa", "0190aa", nil},
		{"02", "0200zz", nil},
		{"0190", "", ErrAmbiguous},
		{"03", "", ErrNotFound},
		{"", "", ErrNotFound},
	}
	for _, tt := range tests {
		r, err := s.Run(tt.in)
		if !errors.Is(err, tt.wantErr) || (err == nil && r.ID != tt.want) {
			t.Errorf("Run(%q) = %v, %v; want %q, %v", tt.in, r, err, tt.want, tt.wantErr)
		}
	}
	if _, err := s.Run("0190"); err == nil || !strings.Contains(err.Error(), "0190aa, 0190ab") {
		t.Errorf("ambiguous error does not list candidates: %v", err)
	}
	if v := s.RunsView("", 2); len(v) != 2 || v[0].ID != "0200zz" || v[1].ID != "0190ab" {
		t.Errorf("RunsView newest first, limit 2 = %+v", v)
	}
	if v := s.RunsView(RunRunning, 0); len(v) != 0 {
		t.Errorf("RunsView(running) = %+v, want none", v)
	}
}

// TestViewShape checks the public view of a finished step: pointers for
// times and exit code, dependencies copied, not aliased.
func TestViewShape(t *testing.T) {
	var l ledger
	s := policied()
	p := event.Plan{Subgoals: []event.Subgoal{{ID: "g"}}, Steps: []event.Step{
		{ID: "a", Subgoal: "g", Kind: event.KindShell, Title: "A"},
		{ID: "b", Kind: event.KindNoop, DependsOn: []string{"a"}},
	}}
	s.Apply(l.add(event.ExecutorOnline, "", "n1", t0, event.ExecutorOnlineData{Slots: 1}))
	s.Apply(l.add(event.GoalSubmitted, "r", "op", t0, event.GoalSubmittedData{Goal: "g"}))
	s.Apply(l.add(event.PlanProposed, "r", "p", t0, event.PlanProposedData{Revision: 1, Plan: p}))
	s.Apply(l.add(event.PlanAccepted, "r", "o", t0, event.PlanAcceptedData{Revision: 1}))
	s.Apply(l.add(event.TaskAssigned, "r", "o", t0, event.TaskAssignedData{Step: p.Steps[0], Attempt: 1, Node: "n1", Policy: s.Policy.Ref()}))
	s.Apply(l.add(event.TaskStarted, "r", "n1", t0.Add(time.Second), event.TaskStartedData{Step: "a", Attempt: 1}))
	s.Apply(l.add(event.TaskFinished, "r", "n1", t0.Add(2*time.Second), event.TaskFinishedData{Step: "a", Attempt: 1, Status: event.TaskSucceeded}))
	v := s.Runs["r"].View()
	a, b := v.Steps[0], v.Steps[1]
	if a.Status != string(StepSucceeded) || a.Subgoal != "g" || a.Title != "A" || a.ExitCode == nil || *a.ExitCode != 0 ||
		a.StartedAt == nil || !a.StartedAt.Equal(t0.Add(time.Second)) || a.FinishedAt == nil || a.Node != "n1" {
		t.Errorf("step a view = %+v", a)
	}
	if b.Status != string(StepReady) || b.ExitCode != nil || b.StartedAt != nil || b.Kind != event.KindNoop {
		t.Errorf("step b view = %+v", b)
	}
	b.DependsOn[0] = "mutated"
	if s.Runs["r"].Steps[1].Spec.DependsOn[0] != "a" {
		t.Error("view aliases the plan's dependencies")
	}
	*a.ExitCode = 9
	if *s.Runs["r"].Steps[0].ExitCode != 0 {
		t.Error("view aliases the exit code")
	}
	if v.FinishedAt != nil || v.Status != event.RunRunning || v.Revision != 1 {
		t.Errorf("run view = %+v", v)
	}
	if s.FreeSlots("n1") != 1 || s.FreeSlots("nobody") != 0 {
		t.Errorf("free slots n1=%d nobody=%d", s.FreeSlots("n1"), s.FreeSlots("nobody"))
	}
}

// TestInterruptedFromBuildsBeforeTheField: a task.finished without the
// interrupted field (a build before it) counts as interrupted when its
// error starts with the prefix such builds wrote; with the field, the
// field decides.
func TestInterruptedFromBuildsBeforeTheField(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		want       StepStatus
		code       Code
	}{
		{"old, interrupted", `{"step":"a","attempt":1,"status":"failed","class":"transient","error":"interrupted: executor restarted"}`, StepFailed, CodeInterruptedNotIdempotent},
		{"old, other transient", `{"step":"a","attempt":1,"status":"failed","class":"transient","error":"wait: x","exit_code":-1}`, StepPending, CodeTransientError},
		{"new, text only", `{"step":"a","attempt":1,"status":"failed","class":"transient","error":"interrupted: x","exit_code":-1,"interrupted":false}`, StepPending, CodeTransientError},
		{"new, interrupted", `{"step":"a","attempt":1,"status":"failed","class":"transient","interrupted":true}`, StepFailed, CodeInterruptedNotIdempotent},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l ledger
			s := policied()
			p := event.Plan{Steps: []event.Step{{ID: "a", Kind: event.KindShell, Run: "true", Retries: 1}}}
			s.Apply(l.add(event.ExecutorOnline, "", "n1", t0, event.ExecutorOnlineData{Slots: 1}))
			s.Apply(l.add(event.GoalSubmitted, "r", "op", t0, event.GoalSubmittedData{Goal: "g"}))
			s.Apply(l.add(event.PlanProposed, "r", "p", t0, event.PlanProposedData{Revision: 1, Plan: p}))
			s.Apply(l.add(event.PlanAccepted, "r", "o", t0, event.PlanAcceptedData{Revision: 1}))
			s.Apply(l.add(event.TaskAssigned, "r", "o", t0, event.TaskAssignedData{Step: p.Steps[0], Attempt: 1, Node: "n1", Policy: s.Policy.Ref()}))
			ev := l.add(event.TaskFinished, "r", "n1", t0, map[string]string{})
			ev.Data = []byte(tt.data)
			s.Apply(ev)
			st := s.Runs["r"].Steps[0]
			if st.Status != tt.want || st.Code != tt.code {
				t.Fatalf("step %s code %s, want %s %s", st.Status, st.Code, tt.want, tt.code)
			}
		})
	}
}
