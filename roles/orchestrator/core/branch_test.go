package core

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// branchOption reads the script's step options next=success:X,failure:Y
// and tests=H[:SUCCESS:FAILURE],... into st.
func branchOption(st *event.Step, k, v string) {
	for _, item := range strings.Split(v, ",") {
		f := strings.Split(item, ":")
		switch k {
		case "next":
			st.Next = append(st.Next, event.Branch{On: event.BranchOn(f[0]), To: f[1]})
		case "tests":
			t := event.HypothesisTest{Hypothesis: f[0]}
			if len(f) == 3 {
				t.Success, t.Failure = event.Evidence(f[1]), event.Evidence(f[2])
			}
			st.Tests = append(st.Tests, t)
		}
	}
}

// formatEvidence prints a step's evidence for the scripts: "" when it
// tests nothing.
func formatEvidence(es []StepEvidence) string {
	if len(es) == 0 {
		return ""
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Hypothesis + ":" + string(e.Evidence)
	}
	return " evidence=" + strings.Join(parts, ",")
}

// branchRun drives one run of plan p to its end with Decide and an
// executor that reports each step's outcome from outcomes (succeeded when
// absent). It returns the final run and every event committed.
func branchRun(t *testing.T, p event.Plan, outcomes map[string]event.TaskStatus) (*Run, []event.Event) {
	t.Helper()
	return branchReplanRun(t, p, outcomes, nil)
}

// branchReplanRun is branchRun with a planner that answers a replan
// request for revision N with revision N+1, the plan next gives.
func branchReplanRun(t *testing.T, p event.Plan, outcomes map[string]event.TaskStatus, next func(rev int) event.Plan) (*Run, []event.Event) {
	t.Helper()
	var l ledger
	s := policied()
	s.TrackChanges()
	var final *Run
	apply := func(ev event.Event) {
		s.Apply(ev)
		for _, c := range s.TakeChanges().Runs {
			if c.Evicted {
				final = c.Run
			}
		}
	}
	now := t0
	apply(l.add(event.ExecutorOnline, "", "n1", now, event.ExecutorOnlineData{Slots: 1000}))
	apply(l.add(event.LeaderElected, "", "o", now, event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o"}))
	apply(l.add(event.GoalSubmitted, "r", "op", now, event.GoalSubmittedData{Goal: "g"}))
	apply(l.add(event.PlanProposed, "r", "p", now, event.PlanProposedData{Revision: 1, Plan: p}))
	for turn := 0; final == nil; turn++ {
		if turn > 4*len(p.Steps)+10 {
			t.Fatalf("run did not end after %d turns: %s", turn, s.Runs["r"].View().Status)
		}
		now = now.Add(time.Second)
		ds, _ := Decide(s, now, 1, nil)
		if len(ds) == 0 {
			t.Fatalf("no decision for a run that goes on:\n%s", viewLines(s.Runs["r"]))
		}
		var assigned []event.TaskAssignedData
		for _, d := range ds {
			apply(l.commit(d.Draft, "o"))
			if d.Draft.Type == event.PlanReplanRequested && next != nil {
				var rq event.PlanReplanRequestedData
				if err := json.Unmarshal(d.Draft.Data, &rq); err != nil {
					t.Fatal(err)
				}
				apply(l.add(event.PlanProposed, "r", "p", now, event.PlanProposedData{Revision: rq.Revision + 1, Plan: next(rq.Revision)}))
			}
			if d.Draft.Type == event.TaskAssigned {
				var a event.TaskAssignedData
				if err := json.Unmarshal(d.Draft.Data, &a); err != nil {
					t.Fatal(err)
				}
				assigned = append(assigned, a)
			}
		}
		for _, a := range assigned {
			status := outcomes[a.Step.ID]
			if status == "" {
				status = event.TaskSucceeded
			}
			d := event.TaskFinishedData{Step: a.Step.ID, Attempt: a.Attempt, Status: status, Node: "n1"}
			if status == event.TaskFailed {
				d.ExitCode, d.Class = 1, event.ClassLogic
			}
			apply(l.add(event.TaskFinished, "r", "n1", now, d))
		}
	}
	return final, l.events
}

// viewLines prints a run's steps, for failures.
func viewLines(r *Run) string {
	if r == nil {
		return "(no run)"
	}
	var b strings.Builder
	for i := range r.Steps {
		fmt.Fprintf(&b, "  %s\n", formatStep(r.StepView(i), r.Steps[i]))
	}
	return b.String()
}

// randomBranchPlan is a plan of 3 to 12 steps in plan order with random
// dependencies, on_failure continue here and there, and branches that
// follow the planner's rules: one branch per outcome, distinct targets,
// a step the target of one branch at most, each target depending on its
// branching step.
func randomBranchPlan(rng *rand.Rand) event.Plan {
	n := 3 + rng.IntN(10)
	p := event.Plan{Steps: make([]event.Step, n)}
	for i := range p.Steps {
		st := &p.Steps[i]
		st.ID, st.Kind, st.Run = fmt.Sprintf("s%d", i), event.KindShell, "true"
		for j := range i {
			if rng.IntN(10) < 3 {
				st.DependsOn = append(st.DependsOn, fmt.Sprintf("s%d", j))
			}
		}
		if rng.IntN(10) < 3 {
			st.OnFailure = event.OnFailureContinue
		}
	}
	targeted := map[int]bool{}
	for i := range p.Steps {
		if rng.IntN(2) == 0 {
			continue
		}
		var free []int
		for k := i + 1; k < n; k++ {
			if !targeted[k] {
				free = append(free, k)
			}
		}
		rng.Shuffle(len(free), func(a, b int) { free[a], free[b] = free[b], free[a] })
		ons := []event.BranchOn{event.BranchOnSuccess, event.BranchOnFailure}
		rng.Shuffle(2, func(a, b int) { ons[a], ons[b] = ons[b], ons[a] })
		for b := 0; b < min(len(free), 1+rng.IntN(2)); b++ {
			k := free[b]
			targeted[k] = true
			p.Steps[i].Next = append(p.Steps[i].Next, event.Branch{On: ons[b], To: p.Steps[k].ID})
			if !slices.Contains(p.Steps[k].DependsOn, p.Steps[i].ID) {
				p.Steps[k].DependsOn = append(p.Steps[k].DependsOn, p.Steps[i].ID)
			}
		}
	}
	return p
}

// TestBranchProperty: for random branching plans and random outcomes,
// every step ends final; in a run that succeeds, exactly one target runs
// per branch taken, the targets of branches not taken and the steps none
// of whose dependencies was reached end skipped with branch_not_taken
// (checked against a model computed from the outcomes alone), and nothing
// else does; a run fails only for a failure no branch routes; and folding
// the run's events again from zero gives the same run.
func TestBranchProperty(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	var succeeded, skipped int
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := randomBranchPlan(rng)
		outcomes := map[string]event.TaskStatus{}
		for _, st := range p.Steps {
			switch rng.IntN(10) {
			case 0, 1, 2, 3:
				outcomes[st.ID] = event.TaskFailed
			case 4:
				outcomes[st.ID] = event.TaskSkipped
			}
		}
		r, events := branchRun(t, p, outcomes)
		fail := func(format string, args ...any) {
			t.Helper()
			plan, _ := json.Marshal(p)
			t.Fatalf("seed %d: %s\nplan %s\noutcomes %v\n%s", seed, fmt.Sprintf(format, args...), plan, outcomes, viewLines(r))
		}
		for _, st := range r.Steps {
			if !st.Terminal() {
				fail("step %s ends %s", st.Spec.ID, st.Status)
			}
		}
		routed := func(st *Step) bool {
			return st.Spec.OnFailure == event.OnFailureContinue || branchTo(st.Spec, event.BranchOnFailure) != ""
		}
		if r.Status != RunSucceeded {
			if !slices.ContainsFunc(r.Steps, func(st *Step) bool { return st.Status == StepFailed && !routed(st) }) {
				fail("run %s without a failure that fails it", r.Status)
			}
		} else {
			succeeded++
			if slices.ContainsFunc(r.Steps, (*Step).notReached) {
				skipped++
			}
			// The model: reached from the outcomes alone, in plan order.
			reached := map[string]bool{}
			for _, st := range r.Steps {
				ok := len(st.Spec.DependsOn) == 0
				cut := false
				for _, dep := range st.Spec.DependsOn {
					d := r.Step(dep)
					ok = ok || reached[dep]
					for _, b := range d.Spec.Next {
						if b.To == st.Spec.ID && (!reached[dep] || d.outcome() != b.On) {
							cut = true
						}
					}
				}
				reached[st.Spec.ID] = ok && !cut
				if st.notReached() == reached[st.Spec.ID] {
					fail("step %s: reached by the model %v, but %s %s", st.Spec.ID, reached[st.Spec.ID], st.Status, st.Code)
				}
				if reached[st.Spec.ID] && st.Status == StepFailed && !routed(st) {
					fail("run succeeded with %s failed for good", st.Spec.ID)
				}
			}
			for _, st := range r.Steps {
				if len(st.Spec.Next) == 0 || !reached[st.Spec.ID] {
					continue
				}
				ran := 0
				for _, b := range st.Spec.Next {
					if reached[b.To] {
						ran++
						if b.On != st.outcome() {
							fail("step %s %s, yet its %s branch %s ran", st.Spec.ID, st.Status, b.On, b.To)
						}
					}
				}
				if want := len(slices.DeleteFunc(slices.Clone(st.Spec.Next), func(b event.Branch) bool { return b.On != st.outcome() })); ran != want {
					fail("step %s %s: %d branch targets ran, want %d", st.Spec.ID, st.Status, ran, want)
				}
			}
		}
		// Replay: the same events from zero give the same run.
		s := policied()
		s.TrackChanges()
		var again *Run
		for _, ev := range events {
			s.Apply(ev)
			for _, c := range s.TakeChanges().Runs {
				if c.Evicted {
					again = c.Run
				}
			}
		}
		if again == nil || !reflect.DeepEqual(again.View(), r.View()) {
			fail("replay differs")
		}
	}
	if succeeded < seeds/10 || skipped < seeds/20 {
		t.Errorf("of %d runs %d succeeded, %d with a branch not taken: the generator explores too little", seeds, succeeded, skipped)
	}
}

// TestBranchFailureRouted: a failure that a failure branch routes lets
// the run succeed; the same failure without the branch fails it.
func TestBranchFailureRouted(t *testing.T) {
	p := event.Plan{Steps: []event.Step{
		{ID: "probe", Kind: event.KindShell, Run: "true", Next: []event.Branch{{On: event.BranchOnFailure, To: "fix"}, {On: event.BranchOnSuccess, To: "ok"}},
			Tests: []event.HypothesisTest{{Hypothesis: "h"}}},
		{ID: "fix", Kind: event.KindShell, Run: "true", DependsOn: []string{"probe"}},
		{ID: "ok", Kind: event.KindNoop, DependsOn: []string{"probe"}, Tests: []event.HypothesisTest{{Hypothesis: "h", Success: event.EvidenceRefutes}}},
		{ID: "after", Kind: event.KindNoop, DependsOn: []string{"ok"}},
		{ID: "join", Kind: event.KindShell, Run: "true", DependsOn: []string{"fix", "ok"}},
	}}
	r, _ := branchRun(t, p, map[string]event.TaskStatus{"probe": event.TaskFailed})
	want := map[string]string{"probe": "failed", "fix": "succeeded", "ok": "skipped", "after": "skipped", "join": "succeeded"}
	v := r.View()
	for _, sv := range v.Steps {
		if sv.Status != want[sv.ID] {
			t.Errorf("step %s %s, want %s\n%s", sv.ID, sv.Status, want[sv.ID], viewLines(r))
		}
	}
	if v.Status != event.RunSucceeded {
		t.Fatalf("run %s (%s), want succeeded", v.Status, v.Reason)
	}
	if ok := v.Steps[2]; ok.Code != string(CodeBranchNotTaken) || ok.Error != "branch not taken: probe failed, and this step is its success branch" {
		t.Errorf("ok: code %q error %q", ok.Code, ok.Error)
	}
	if after := v.Steps[3]; after.Code != string(CodeBranchNotTaken) || !strings.Contains(after.Error, "none of its dependencies was reached") {
		t.Errorf("after: code %q error %q", after.Code, after.Error)
	}
	p.Hypotheses = []event.Hypothesis{{ID: "h", Statement: "s"}, {ID: "u", Statement: "t"}}
	hyps := Hypotheses(p, v.Steps)
	wantH := []HypothesisView{
		{ID: "h", Statement: "s", Verdict: VerdictRefuted, Evidence: []HypothesisEvidence{
			{Step: "probe", Status: "failed", Evidence: event.EvidenceRefutes}, {Step: "ok", Status: "skipped", Evidence: event.EvidenceNone}}},
		{ID: "u", Statement: "t", Verdict: VerdictUntested, Evidence: []HypothesisEvidence{}},
	}
	if !reflect.DeepEqual(hyps, wantH) {
		t.Errorf("hypotheses\n%+v\nwant\n%+v", hyps, wantH)
	}

	p.Steps[0].Next = p.Steps[0].Next[1:] // no failure branch: abort
	r, _ = branchRun(t, p, map[string]event.TaskStatus{"probe": event.TaskFailed})
	if r.Status != RunFailed || r.Code != CodeStepFailed {
		t.Fatalf("without a failure branch: run %s %s", r.Status, r.Code)
	}
}

// TestHypothesisVerdicts: supported, refuted, mixed and untested.
func TestHypothesisVerdicts(t *testing.T) {
	p := event.Plan{Hypotheses: []event.Hypothesis{{ID: "s"}, {ID: "r"}, {ID: "m"}, {ID: "n"}}}
	var steps []StepView
	for _, x := range []struct {
		step, h string
		e       event.Evidence
	}{{"a", "s", event.EvidenceSupports}, {"b", "r", event.EvidenceRefutes}, {"c", "m", event.EvidenceSupports},
		{"d", "m", event.EvidenceRefutes}, {"e", "n", event.EvidenceNone}} {
		p.Steps = append(p.Steps, event.Step{ID: x.step, Tests: []event.HypothesisTest{{Hypothesis: x.h}}})
		steps = append(steps, StepView{ID: x.step, Status: "x", Evidence: []StepEvidence{{Hypothesis: x.h, Evidence: x.e}}})
	}
	p.Steps = append(p.Steps, event.Step{ID: "f", Tests: []event.HypothesisTest{{Hypothesis: "s"}}}) // no view: another revision
	var got []string
	for _, h := range Hypotheses(p, steps) {
		got = append(got, fmt.Sprintf("%s=%s/%d", h.ID, h.Verdict, len(h.Evidence)))
	}
	if want := []string{"s=supported/2", "r=refuted/1", "m=mixed/2", "n=untested/1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts %v, want %v", got, want)
	}
	if e := Hypotheses(p, steps)[0].Evidence[1]; e != (HypothesisEvidence{Step: "f", Status: "-", Evidence: event.EvidenceNone}) {
		t.Errorf("a step without a view: %+v", e)
	}
}

// TestBranchPlanInvalid: a plan whose branches break the planner's rules
// cannot be scheduled (Run.Invalid; Decide fails the run).
func TestBranchPlanInvalid(t *testing.T) {
	step := func(id string, deps []string, next ...event.Branch) event.Step {
		return event.Step{ID: id, Kind: event.KindNoop, DependsOn: deps, Next: next}
	}
	fail, ok := event.Branch{On: event.BranchOnFailure, To: "b"}, event.Branch{On: event.BranchOnSuccess, To: "b"}
	for _, tc := range []struct {
		name  string
		steps []event.Step
		want  string
	}{
		{"target without the dependency", []event.Step{step("a", nil, fail), step("b", nil)}, `step "a" branches to "b", which is not a step that depends on it`},
		{"unknown target", []event.Step{step("a", nil, event.Branch{On: event.BranchOnFailure, To: "zz"})}, `branches to "zz"`},
		{"unknown outcome", []event.Step{step("a", nil, event.Branch{On: "maybe", To: "b"}), step("b", []string{"a"})}, `branches on "maybe"`},
		{"both outcomes to one target", []event.Step{step("a", nil, fail, ok), step("b", []string{"a"})}, `step "a" has two branches to "b"`},
		{"two branches on one outcome", []event.Step{step("a", nil, fail, event.Branch{On: event.BranchOnFailure, To: "c"}), step("b", []string{"a"}), step("c", []string{"a"})}, `step "a" has two branches on failure`},
		{"target of two steps", []event.Step{step("a", nil, fail), step("c", nil, ok), step("b", []string{"a", "c"})}, `target of branches of both "a" and "c"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{ID: "r", Steps: make([]*Step, len(tc.steps))}
			for i, spec := range tc.steps {
				r.Steps[i] = &Step{Spec: spec}
			}
			if got := r.buildIndex(); !strings.Contains(got, tc.want) {
				t.Errorf("buildIndex = %q, want %q", got, tc.want)
			}
		})
	}
	r := &Run{ID: "r", Steps: []*Step{{Spec: step("a", nil, fail)}, {Spec: step("b", []string{"a"})}}}
	if got := r.buildIndex(); got != "" {
		t.Errorf("a valid branch: %q", got)
	}
}

// TestBranchAfterReplan: a revision keeps the steps done but no step
// skipped for a branch: the fold settles it again against the revision,
// so a branch target stays skipped when the outcome that decided it is
// kept, and runs when the revision changes that.
func TestBranchAfterReplan(t *testing.T) {
	probe := event.Step{ID: "probe", Kind: event.KindShell, Run: "true", Next: []event.Branch{{On: event.BranchOnFailure, To: "fix"}}}
	fix := event.Step{ID: "fix", Kind: event.KindShell, Run: "true", DependsOn: []string{"probe"}}
	x := event.Step{ID: "x", Kind: event.KindShell, Run: "false", OnFailure: event.OnFailureReplan}
	p := event.Plan{Steps: []event.Step{probe, fix, x}}
	x2 := event.Step{ID: "x2", Kind: event.KindShell, Run: "true"}
	r, _ := branchReplanRun(t, p, map[string]event.TaskStatus{"x": event.TaskFailed}, func(int) event.Plan {
		return event.Plan{Steps: []event.Step{probe, fix, x2}}
	})
	if r.Status != RunSucceeded || r.Revision != 2 {
		t.Fatalf("run %s rev %d\n%s", r.Status, r.Revision, viewLines(r))
	}
	if f := r.Step("fix"); !f.notReached() || r.Step("probe").Attempt != 1 {
		t.Fatalf("after the replan:\n%s", viewLines(r))
	}

	// The revision drops probe's branch: fix is an ordinary dependent now.
	plain := probe
	plain.Next = nil
	r, _ = branchReplanRun(t, p, map[string]event.TaskStatus{"x": event.TaskFailed}, func(int) event.Plan {
		return event.Plan{Steps: []event.Step{plain, fix, x2}}
	})
	if r.Status != RunSucceeded || r.Step("fix").Status != StepSucceeded {
		t.Fatalf("after a replan without the branch:\n%s", viewLines(r))
	}

	// The revision drops fix but keeps probe's branch to it: the
	// revision cannot be scheduled, and the run fails saying why.
	r, _ = branchReplanRun(t, p, map[string]event.TaskStatus{"x": event.TaskFailed}, func(int) event.Plan {
		return event.Plan{Steps: []event.Step{probe, x2}}
	})
	if r.Status != RunFailed || r.Code != CodePlanInvalid || !strings.Contains(r.Reason, `invalid plan revision 2: step "probe" branches to "fix"`) || r.Revision != 1 {
		t.Fatalf("after a revision that drops a branch's target: %s %s %q rev %d\n%s", r.Status, r.Code, r.Reason, r.Revision, viewLines(r))
	}
}
