package orchestrator

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
