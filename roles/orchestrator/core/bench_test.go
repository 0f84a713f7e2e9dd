package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// widePlan is layers × width steps; each step depends on two steps of the
// layer before.
func widePlan(layers, width int) event.Plan {
	var p event.Plan
	for l := range layers {
		for w := range width {
			st := event.Step{ID: fmt.Sprintf("l%02d-w%02d", l, w), Kind: event.KindNoop}
			if l > 0 {
				st.DependsOn = []string{fmt.Sprintf("l%02d-w%02d", l-1, w), fmt.Sprintf("l%02d-w%02d", l-1, (w+1)%width)}
			}
			p.Steps = append(p.Steps, st)
		}
	}
	return p
}

// BenchmarkDecideApply drives a 2,000-step plan of width 50 to success on 5
// executors × 10 slots the way the leader loop does: fold the decisions
// back, fold each result, and Decide again after every result. It reports
// decisions per second (Decide plus folding everything back), with the
// state untracked (the orchestrator role) and tracked, its changes taken
// after every event (the run index).
//
// "shell" runs the same plan made of shell steps the policy judges (each
// ready step is judged before it is assigned, and its assignment when it
// is folded; verdicts are memoized by gate subject).
func BenchmarkDecideApply(b *testing.B) {
	for _, tracked := range []bool{false, true} {
		name := "untracked"
		if tracked {
			name = "tracked"
		}
		b.Run(name, func(b *testing.B) { benchDecideApply(b, tracked, false) })
	}
	b.Run("shell", func(b *testing.B) { benchDecideApply(b, false, true) })
}

func benchDecideApply(b *testing.B, tracked, shell bool) {
	p := widePlan(40, 50)
	if shell {
		for i := range p.Steps {
			p.Steps[i].Kind = event.KindShell
			p.Steps[i].Run = fmt.Sprintf("make -C ./mod%d test -j4 && ./scripts/deploy.sh --env staging %s | tee -a ./out.log", i, p.Steps[i].ID)
		}
	}
	var decisions, events int
	b.ReportAllocs()
	for b.Loop() {
		var l ledger
		s := policied()
		if tracked {
			s.TrackChanges()
		}
		var final RunStatus
		apply := func(ev event.Event) {
			s.Apply(ev)
			for _, c := range s.TakeChanges().Runs {
				if c.Evicted {
					final = c.Run.Status
				}
			}
		}
		now := t0
		for i := range 5 {
			apply(l.add(event.ExecutorOnline, "", fmt.Sprintf("n%d", i), now, event.ExecutorOnlineData{Slots: 10}))
		}
		apply(l.add(event.LeaderElected, "", "o1", now, event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"}))
		apply(l.add(event.GoalSubmitted, "r1", "op", now, event.GoalSubmittedData{Goal: "wide"}))
		apply(l.add(event.PlanProposed, "r1", "planner", now, event.PlanProposedData{Revision: 1, Plan: p}))
		var running []event.TaskAssignedData
		for s.Runs["r1"] != nil {
			ds, _ := Decide(s, now, 1, nil)
			decisions += len(ds)
			for _, d := range ds {
				apply(l.commit(d.Draft, "o1"))
				if d.Draft.Type == event.TaskAssigned {
					var a event.TaskAssignedData
					if err := (&event.Event{Data: d.Draft.Data}).Decode(&a); err != nil {
						b.Fatal(err)
					}
					running = append(running, a)
				}
			}
			if len(ds) == 0 && len(running) == 0 {
				b.Fatalf("stuck: %+v", s.Runs["r1"].View())
			}
			if len(running) > 0 {
				a := running[0]
				running = running[1:]
				now = now.Add(time.Millisecond)
				apply(l.add(event.TaskFinished, "r1", a.Node, now, event.TaskFinishedData{
					Step: a.Step.ID, Attempt: a.Attempt, Node: a.Node, Status: event.TaskSucceeded}))
			}
		}
		if tracked && final != RunSucceeded {
			b.Fatalf("run ended %q", final)
		}
		events += len(l.events)
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(decisions)/sec, "decisions/s")
	b.ReportMetric(float64(events)/sec, "events/s")
}

// branchingPlan is a 10,000-step plan of 100 decision points d-k. Each
// succeeds and branches: on success to s-k, on failure to the head of a
// 97-step chain f-k-*, which is not reached and ends skipped step by step
// (the skip cascade). j-k joins s-k and the chain's end, and d-(k+1)
// depends on j-k; the last step, end, joins every j-k.
func branchingPlan() event.Plan {
	var p event.Plan
	var joins []string
	for k := range 99 {
		d, s, j := fmt.Sprintf("d-%d", k), fmt.Sprintf("s-%d", k), fmt.Sprintf("j-%d", k)
		f := func(i int) string { return fmt.Sprintf("f-%d-%d", k, i) }
		st := event.Step{ID: d, Kind: event.KindNoop,
			Next: []event.Branch{{On: event.BranchOnSuccess, To: s}, {On: event.BranchOnFailure, To: f(0)}}}
		if k > 0 {
			st.DependsOn = []string{fmt.Sprintf("j-%d", k-1)}
		}
		p.Steps = append(p.Steps, st,
			event.Step{ID: s, Kind: event.KindNoop, DependsOn: []string{d}},
			event.Step{ID: f(0), Kind: event.KindNoop, DependsOn: []string{d}})
		for i := 1; i < 97; i++ {
			p.Steps = append(p.Steps, event.Step{ID: f(i), Kind: event.KindNoop, DependsOn: []string{f(i - 1)}})
		}
		p.Steps = append(p.Steps, event.Step{ID: j, Kind: event.KindNoop, DependsOn: []string{s, f(96)}})
		joins = append(joins, j)
	}
	for len(p.Steps) < 10000-1 {
		p.Steps = append(p.Steps, event.Step{ID: fmt.Sprintf("x-%d", len(p.Steps)), Kind: event.KindNoop,
			DependsOn: []string{joins[len(joins)-1]}})
	}
	p.Steps = append(p.Steps, event.Step{ID: "end", Kind: event.KindNoop, DependsOn: joins})
	return p
}

// chainPlan is a 10,000-step plan whose first step branches on success
// to ok and on failure to the head of a 9,997-step chain, which is not
// reached: the longest skip cascade, settled by one result. end joins ok
// and the chain's end.
func chainPlan() event.Plan {
	p := event.Plan{Steps: []event.Step{{ID: "d", Kind: event.KindNoop,
		Next: []event.Branch{{On: event.BranchOnSuccess, To: "ok"}, {On: event.BranchOnFailure, To: "f-0"}}},
		{ID: "ok", Kind: event.KindNoop, DependsOn: []string{"d"}},
		{ID: "f-0", Kind: event.KindNoop, DependsOn: []string{"d"}}}}
	for i := 1; i < 9997; i++ {
		p.Steps = append(p.Steps, event.Step{ID: fmt.Sprintf("f-%d", i), Kind: event.KindNoop, DependsOn: []string{fmt.Sprintf("f-%d", i-1)}})
	}
	p.Steps = append(p.Steps, event.Step{ID: "end", Kind: event.KindNoop, DependsOn: []string{"ok", "f-9996"}})
	return p
}

// critiquePlan is a 10,000-step plan: 5,000 noop steps, each judged by a
// critique step; each pair depends on the one before.
func critiquePlan() event.Plan {
	var p event.Plan
	for k := range 5000 {
		st := event.Step{ID: fmt.Sprintf("w-%d", k), Kind: event.KindNoop}
		if k > 0 {
			st.DependsOn = []string{fmt.Sprintf("c-%d", k-1)}
		}
		p.Steps = append(p.Steps, st, event.Step{ID: fmt.Sprintf("c-%d", k), Kind: event.KindCritique,
			Target: st.ID, Criteria: "it worked", DependsOn: []string{st.ID}})
	}
	return p
}

// joinPlan is 9,999 independent noop steps and one step that joins them
// all: the widest join the plan limits allow.
func joinPlan() event.Plan {
	var p event.Plan
	var all []string
	for k := range 9999 {
		id := fmt.Sprintf("p-%d", k)
		p.Steps = append(p.Steps, event.Step{ID: id, Kind: event.KindNoop})
		all = append(all, id)
	}
	p.Steps = append(p.Steps, event.Step{ID: "join", Kind: event.KindNoop, DependsOn: all})
	return p
}

// BenchmarkSettle drives a 10,000-step plan to success on 5 executors ×
// 10 slots, the way the leader loop does (as BenchmarkDecideApply), with
// a planner that claims every critique attempt and passes it: "branching"
// (branchingPlan: 9,603 steps skipped behind untaken branches, many
// joins), "chain" (chainPlan: one skip cascade 9,997 steps long),
// "critique" (critiquePlan: 5,000 critique steps) and "join"
// (joinPlan). It reports the steps settled per second.
func BenchmarkSettle(b *testing.B) {
	for _, c := range []struct {
		name string
		plan func() event.Plan
	}{{"branching", branchingPlan}, {"chain", chainPlan}, {"critique", critiquePlan}, {"join", joinPlan}} {
		b.Run(c.name, func(b *testing.B) { benchSettle(b, c.plan()) })
	}
}

func benchSettle(b *testing.B, p event.Plan) {
	if len(p.Steps) != 10000 {
		b.Fatalf("the plan has %d steps", len(p.Steps))
	}
	b.ReportAllocs()
	for b.Loop() {
		var l ledger
		s := policied()
		s.TrackChanges()
		apply := func(ev event.Event) {
			s.Apply(ev)
			s.TakeChanges()
		}
		now := t0
		for i := range 5 {
			apply(l.add(event.ExecutorOnline, "", fmt.Sprintf("n%d", i), now, event.ExecutorOnlineData{Slots: 10}))
		}
		apply(l.add(event.LeaderElected, "", "o1", now, event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"}))
		apply(l.add(event.GoalSubmitted, "r1", "op", now, event.GoalSubmittedData{Goal: "big"}))
		apply(l.add(event.PlanProposed, "r1", "planner", now, event.PlanProposedData{Revision: 1, Plan: p}))
		var running []event.TaskAssignedData
		var judging []event.CritiqueRequestedData
		for s.Runs["r1"] != nil {
			ds, _ := Decide(s, now, 1, nil)
			for _, d := range ds {
				apply(l.commit(d.Draft, "o1"))
				switch d.Draft.Type {
				case event.TaskAssigned:
					var a event.TaskAssignedData
					if err := (&event.Event{Data: d.Draft.Data}).Decode(&a); err != nil {
						b.Fatal(err)
					}
					running = append(running, a)
				case event.CritiqueRequested:
					var c event.CritiqueRequestedData
					if err := (&event.Event{Data: d.Draft.Data}).Decode(&c); err != nil {
						b.Fatal(err)
					}
					judging = append(judging, c)
				case event.RunFinished:
					var f event.RunFinishedData
					if err := (&event.Event{Data: d.Draft.Data}).Decode(&f); err != nil {
						b.Fatal(err)
					}
					if f.Status != RunSucceeded.Wire() {
						b.Fatalf("run ended %s: %s", f.Status, f.Reason)
					}
				}
			}
			if len(ds) == 0 && len(running) == 0 && len(judging) == 0 {
				b.Fatalf("stuck: %+v", s.Runs["r1"].View())
			}
			now = now.Add(time.Millisecond)
			switch {
			case len(judging) > 0:
				c := judging[0]
				judging = judging[1:]
				apply(l.add(event.PlanClaimed, "r1", "planner", now, event.PlanClaimedData{Until: now.Add(time.Minute), Step: c.Step, Attempt: c.Attempt}))
				apply(l.add(event.CritiqueRecorded, "r1", "planner", now, event.CritiqueRecordedData{Step: c.Step, Attempt: c.Attempt,
					Verdict: event.VerdictPass, Judgement: "fine"}))
			case len(running) > 0:
				a := running[0]
				running = running[1:]
				apply(l.add(event.TaskFinished, "r1", a.Node, now, event.TaskFinishedData{
					Step: a.Step.ID, Attempt: a.Attempt, Node: a.Node, Status: event.TaskSucceeded}))
			}
		}
	}
	b.ReportMetric(float64(len(p.Steps)*b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkHypotheses computes plan show's evidence (Hypotheses) for the
// largest plan: 10,000 final steps, each testing all of 100 hypotheses.
func BenchmarkHypotheses(b *testing.B) {
	var p event.Plan
	for h := range 100 {
		p.Hypotheses = append(p.Hypotheses, event.Hypothesis{ID: fmt.Sprintf("h%d", h), Statement: "it is so"})
	}
	views := make([]StepView, 0, 10000)
	for k := range 10000 {
		st := event.Step{ID: fmt.Sprintf("s%d", k), Kind: event.KindNoop}
		sv := StepView{ID: st.ID, Status: StepSucceeded.Wire()}
		for _, h := range p.Hypotheses {
			st.Tests = append(st.Tests, event.HypothesisTest{Hypothesis: h.ID})
			sv.Evidence = append(sv.Evidence, StepEvidence{Hypothesis: h.ID, Evidence: event.EvidenceSupports})
		}
		p.Steps = append(p.Steps, st)
		views = append(views, sv)
	}
	b.ReportAllocs()
	for b.Loop() {
		hs := Hypotheses(p, views)
		if len(hs) != 100 || len(hs[99].Evidence) != 10000 || hs[99].Verdict != VerdictSupported {
			b.Fatalf("%d hypotheses, the last %s with %d steps", len(hs), hs[99].Verdict, len(hs[99].Evidence))
		}
	}
}
