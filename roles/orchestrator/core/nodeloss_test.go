package core

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// fixture builds a state through committed events, as a ledger would.
type fixture struct {
	t *testing.T
	l ledger
	s *State
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, s: policied()}
	f.add(event.LeaderElected, "", "o1", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"})
	return f
}

func (f *fixture) add(typ event.Type, run, node string, payload any) {
	f.s.Apply(f.l.add(typ, run, node, t0, payload))
}

func (f *fixture) online(node string, slots, queue int, caps ...string) {
	f.add(event.ExecutorOnline, "", node, event.ExecutorOnlineData{Slots: slots, Queue: queue, Capabilities: caps, Incarnation: "i1"})
}

// run starts run id with steps, accepted.
func (f *fixture) run(id string, steps ...event.Step) {
	f.add(event.GoalSubmitted, id, "op", event.GoalSubmittedData{Goal: id})
	f.add(event.PlanProposed, id, "planner", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: steps}})
	f.add(event.PlanAccepted, id, "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
}

func (f *fixture) assign(run string, spec event.Step, attempt int, node string) {
	f.add(event.TaskAssigned, run, "o1", event.TaskAssignedData{Decision: event.Decision{Epoch: 1}, Step: spec, Attempt: attempt, Node: node, Policy: f.s.Policy.Ref()})
}

// decide runs Decide at now and commits its decisions.
func (f *fixture) decide(now time.Time) []Decision {
	ds, _ := Decide(f.s, now, 1, nil)
	for _, d := range ds {
		f.s.Apply(f.l.commit(d.Draft, "o1"))
	}
	return ds
}

func (f *fixture) step(run, id string) *Step {
	_, _, st := f.s.step(run, id)
	if st == nil {
		f.t.Fatalf("no step %s/%s", run, id)
	}
	return st
}

// TestSupersedeOutcomes: the fold of an attempt given up makes its step
// pending (a new attempt, with the reason) when the step is idempotent —
// marked so, a noop, or guarded by creates or check — or its attempt never
// started (assigned, queued behind the executor's slots), and holds it in
// needs-decision otherwise; neither counts against its retries.
func TestSupersedeOutcomes(t *testing.T) {
	plain := event.Step{Kind: event.KindShell, Run: "x"}
	with := func(f func(*event.Step)) event.Step { s := plain; f(&s); return s }
	specs := map[string]event.Step{
		"plain":      plain,
		"idempotent": with(func(s *event.Step) { s.Idempotent = true }),
		"noop":       with(func(s *event.Step) { s.Kind, s.Run = event.KindNoop, "" }),
		"creates":    with(func(s *event.Step) { s.Creates = "out" }),
		"check":      with(func(s *event.Step) { s.Check = "test -f out" }),
	}
	tests := []struct {
		spec    string
		where   string // running, slot (assigned with a free slot), queued
		want    StepStatus
		wantRun bool // Decide gives it a new attempt at once
	}{
		{"plain", "running", StepNeedsDecision, false},
		{"plain", "slot", StepNeedsDecision, false},
		{"plain", "queued", StepPending, true},
		{"idempotent", "running", StepPending, true},
		{"idempotent", "slot", StepPending, true},
		{"noop", "running", StepPending, true},
		{"creates", "running", StepPending, true},
		{"check", "slot", StepPending, true},
	}
	for _, tt := range tests {
		t.Run(tt.spec+"/"+tt.where, func(t *testing.T) {
			f := newFixture(t)
			f.online("n1", 1, 1)
			f.online("n2", 1, 0)
			spec := specs[tt.spec]
			spec.ID = "s"
			f.run("r", event.Step{ID: "first", Kind: event.KindShell, Run: "y"}, spec)
			f.assign("r", f.step("r", "first").Spec, 1, "n1") // holds n1's slot
			f.assign("r", spec, 1, "n1")
			switch tt.where {
			case "running":
				f.add(event.TaskCancel, "r", "o1", event.TaskCancelData{Decision: event.Decision{Epoch: 1}, Step: "first", Attempt: 1, Node: "n1"})
				f.add(event.TaskFinished, "r", "n1", event.TaskFinishedData{Step: "first", Attempt: 1, Status: event.TaskSucceeded})
				f.add(event.TaskStarted, "r", "n1", event.TaskStartedData{Step: "s", Attempt: 1})
			case "slot":
				f.add(event.TaskFinished, "r", "n1", event.TaskFinishedData{Step: "first", Attempt: 1, Status: event.TaskSucceeded})
			}
			st := f.step("r", "s")
			if (tt.where == "slot") == st.SlotAt.IsZero() && tt.where != "running" {
				t.Fatalf("SlotAt %v where %s", st.SlotAt, tt.where)
			}
			f.add(event.NodeFailed, "", "o1", event.NodeData{Decision: event.Decision{Epoch: 1}, Node: "n1", Incarnation: "i1"})
			ds := f.decide(t0.Add(time.Second))
			var cancel event.TaskCancelData
			for _, d := range ds {
				if d.Draft.Type == event.TaskCancel && d.Key.Step == "s" {
					if err := json.Unmarshal(d.Draft.Data, &cancel); err != nil {
						t.Fatal(err)
					}
				}
			}
			if cancel.Code != CodeSuperseded.Wire() || cancel.Node != "n1" || cancel.Reason != "node n1 failed" {
				t.Fatalf("give-up cancel %+v in %v", cancel, ds)
			}
			if st.Status != tt.want || st.Code != CodeNodeLost || st.Reassigned != 1 || st.Lost != 1 {
				t.Fatalf("after the cancel: %s code %s reassigned %d lost %d, want %s", st.Status, st.Code, st.Reassigned, st.Lost, tt.want)
			}
			ds = f.decide(t0.Add(2 * time.Second))
			if got := len(ds) == 1 && ds[0].Key == testAssignKey("r", "s", 2, "n2"); got != tt.wantRun {
				t.Fatalf("next round %v, want a new attempt on n2: %v", ds, tt.wantRun)
			}
			if tt.wantRun {
				var a event.TaskAssignedData
				if err := json.Unmarshal(ds[0].Draft.Data, &a); err != nil || a.Reason != "node n1 failed" {
					t.Fatalf("assignment %+v %v: want the reason", a, err)
				}
				// A transient failure of the new attempt is retried: the
				// attempt given up does not count against retries: 1.
				st.Spec.Retries = 1
				f.add(event.TaskFinished, "r", "n2", event.TaskFinishedData{Step: "s", Attempt: 2, Status: event.TaskFailed, Class: event.ClassTransient})
				if st.Status != StepPending {
					t.Fatalf("a first failure after a reassignment: %s, want pending (retried)", st.Status)
				}
			}
		})
	}
}

// TestPickNode: capacity is slots + queue, capabilities are all required,
// the most free slots win (ties: the lower id), gone, draining and suspect
// executors take nothing, and the node of an attempt just given up is
// taken only when no other will do.
func TestPickNode(t *testing.T) {
	type ex struct {
		slots, queue, load int
		caps               []string
		gone               NodeState
		draining, suspect  bool
	}
	tests := []struct {
		name  string
		execs map[string]ex
		caps  []string
		avoid string
		want  string
	}{
		{"most free slots", map[string]ex{"a": {slots: 2, load: 1}, "b": {slots: 4, load: 2}}, nil, "", "b"},
		{"tie to the lower id", map[string]ex{"b": {slots: 2}, "a": {slots: 2}}, nil, "", "a"},
		{"queue when no slot is free", map[string]ex{"a": {slots: 1, load: 1}, "b": {slots: 1, queue: 1, load: 1}}, nil, "", "b"},
		{"full", map[string]ex{"a": {slots: 1, queue: 1, load: 2}}, nil, "", ""},
		{"a free slot before a queue", map[string]ex{"a": {slots: 4, queue: 4, load: 4}, "b": {slots: 1}}, nil, "", "b"},
		{"capabilities, all of them", map[string]ex{"a": {slots: 9, caps: []string{"docker"}}, "b": {slots: 1, caps: []string{"gpu", "docker"}}},
			[]string{"docker", "gpu"}, "", "b"},
		{"no executor offers it", map[string]ex{"a": {slots: 9, caps: []string{"docker"}}}, []string{"gpu"}, "", ""},
		{"gone", map[string]ex{"a": {slots: 9, gone: NodeFailed}, "b": {slots: 1}}, nil, "", "b"},
		{"left", map[string]ex{"a": {slots: 9, gone: NodeLeft}}, nil, "", ""},
		{"draining", map[string]ex{"a": {slots: 9, draining: true}, "b": {slots: 1}}, nil, "", "b"},
		{"suspect", map[string]ex{"a": {slots: 9, suspect: true}, "b": {slots: 1}}, nil, "", "b"},
		{"avoid the node that did not start it", map[string]ex{"a": {slots: 9}, "b": {slots: 1}}, nil, "a", "b"},
		{"unless no other will do", map[string]ex{"a": {slots: 9}, "b": {slots: 1, load: 1}}, nil, "a", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := policied()
			d := &decider{s: s, load: map[string]int{}}
			for _, id := range slices.Sorted(maps.Keys(tt.execs)) {
				e := tt.execs[id]
				s.Executors[id] = &Executor{Slots: e.slots, Queue: e.queue, Capabilities: e.caps, Gone: e.gone, Draining: e.draining, Incarnation: "i1"}
				if e.suspect {
					s.Nodes[id] = &Node{Incarnation: "i1", State: NodeSuspect}
				}
				if s.schedulable(id, s.Executors[id]) {
					d.nodes = append(d.nodes, id)
				}
				d.load[id] = e.load
			}
			if got := d.pickNode(tt.caps, tt.avoid); got != tt.want {
				t.Fatalf("pickNode = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCancelCodes: the cancels of a run that stops carry the run's code;
// an attempt given up carries superseded, and only that one changes the
// step when folded.
func TestCancelCodes(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 2, 0)
	a := event.Step{ID: "a", Kind: event.KindShell, Run: "x"}
	b := event.Step{ID: "b", Kind: event.KindShell, Run: "y"}
	f.run("r", a, b)
	f.decide(t0)
	f.add(event.TaskStarted, "r", "n1", event.TaskStartedData{Step: "b", Attempt: 1})
	f.add(event.TaskFinished, "r", "n1", event.TaskFinishedData{Step: "a", Attempt: 1, Status: event.TaskFailed, Class: event.ClassLogic, ExitCode: 2})
	ds, _ := Decide(f.s, t0, 1, nil)
	if len(ds) != 2 || ds[0].Draft.Type != event.TaskCancel || ds[1].Draft.Type != event.RunFinished {
		t.Fatalf("decisions %v", ds)
	}
	var c event.TaskCancelData
	if err := json.Unmarshal(ds[0].Draft.Data, &c); err != nil || c.Code != CodeStepFailed.Wire() {
		t.Fatalf("cancel of a failing run: %+v %v, want code step_failed", c, err)
	}
	f.s.Apply(f.l.commit(ds[0].Draft, "o1"))
	if st := f.step("r", "b"); st.Status != StepRunning || st.CancelSent != 1 || st.Reassigned != 0 {
		t.Fatalf("after the run's cancel: %s cancel_sent %d", st.Status, st.CancelSent)
	}
}

// TestStepDecided: an operator's decision applies only to a step held in
// needs-decision; anything else is ignored and counted.
func TestStepDecided(t *testing.T) {
	tests := []struct {
		name    string
		hold    bool
		action  event.StepAction
		want    StepStatus
		ignored bool
	}{
		{"retry", true, event.StepRetry, StepPending, false},
		{"skip", true, event.StepSkip, StepSkipped, false},
		{"unknown action", true, "redo", StepNeedsDecision, true},
		{"not held", false, event.StepRetry, StepRunning, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.online("n1", 1, 0)
			f.online("n2", 1, 0)
			s := event.Step{ID: "s", Kind: event.KindShell, Run: "x"}
			next := event.Step{ID: "next", Kind: event.KindShell, Run: "y", DependsOn: []string{"s"}}
			f.run("r", s, next)
			f.assign("r", s, 1, "n1")
			f.add(event.TaskStarted, "r", "n1", event.TaskStartedData{Step: "s", Attempt: 1})
			if tt.hold {
				f.add(event.NodeLeft, "", "o1", event.NodeData{Decision: event.Decision{Epoch: 1}, Node: "n1", Incarnation: "i1"})
				f.decide(t0)
			}
			ignored := f.s.Ignored
			f.add(event.StepDecided, "r", "op", event.StepDecidedData{Step: "s", Action: tt.action, Reason: "looked"})
			st := f.step("r", "s")
			if st.Status != tt.want || (f.s.Ignored > ignored) != tt.ignored {
				t.Fatalf("status %s ignored %d→%d, want %s ignored %v", st.Status, ignored, f.s.Ignored, tt.want, tt.ignored)
			}
			ds, _ := Decide(f.s, t0, 1, nil)
			switch tt.want {
			case StepPending:
				if len(ds) != 1 || ds[0].Key != testAssignKey("r", "s", 2, "n2") || !strings.Contains(string(ds[0].Draft.Data), "retry decided by an operator: looked") {
					t.Fatalf("after retry: %v", ds)
				}
			case StepSkipped:
				if st.Code != CodeSkippedByOperator || len(ds) != 1 || ds[0].Key.Step != "next" {
					t.Fatalf("after skip: code %s, decisions %v: want its dependent assigned", st.Code, ds)
				}
			}
		})
	}
}

// TestLoad: the steps each node holds, assigned or running, across runs;
// they leave the count when their attempt ends or is given up.
func TestLoad(t *testing.T) {
	f := newFixture(t)
	f.online("n1", 2, 2)
	f.online("n2", 1, 0)
	a := event.Step{ID: "a", Kind: event.KindShell, Run: "x", Idempotent: true}
	f.run("r1", a)
	f.run("r2", a)
	f.run("r3", a)
	f.decide(t0)
	if got, want := f.s.Load(), map[string]int{"n1": 2, "n2": 1}; !maps.Equal(got, want) {
		t.Fatalf("Load = %v, want %v", got, want)
	}
	f.add(event.NodeFailed, "", "o1", event.NodeData{Decision: event.Decision{Epoch: 1}, Node: "n1", Incarnation: "i1"})
	f.decide(t0)
	if got, want := f.s.Load(), map[string]int{"n2": 1}; !maps.Equal(got, want) {
		t.Fatalf("Load after n1 failed = %v, want %v", got, want)
	}
}
