package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// critiqueOption sets a plan line's critique option: target=T makes the
// step a critique of T (depending on it), criteria=WORDS its criteria.
func critiqueOption(st *event.Step, k, v string) {
	st.Kind, st.Run = event.KindCritique, ""
	switch k {
	case "target":
		st.Target = v
		st.DependsOn = append(st.DependsOn, v)
	case "criteria":
		st.Criteria = strings.ReplaceAll(v, "_", " ")
	}
}

// verdict folds a planner's critique.recorded.
func (sc *script) verdict(t *testing.T, a args) []string {
	run, step := a.pos[0], a.pos[1]
	d := event.CritiqueRecordedData{Step: step, Attempt: a.int(t, 2), Verdict: event.CritiqueVerdict(a.pos[3]), Code: a.opt["code"]}
	if d.Verdict == event.VerdictError {
		d.Error = a.rest
	} else {
		d.Judgement = a.rest
	}
	node := a.opt["node"]
	if node == "" {
		node = "planner-1"
	}
	return sc.fold(event.CritiqueRecorded, run, node, d, sc.stepLine(step))
}

// describeCritique shows a critique.requested decision.
func describeCritique(d Decision) string {
	var p event.CritiqueRequestedData
	_ = json.Unmarshal(d.Draft.Data, &p)
	s := fmt.Sprintf("critique %s/%s#%d target=%s(%s exit=%d) criteria=%q goal=%q", d.Draft.Run, p.Step, p.Attempt,
		p.Target, p.TargetStatus, p.ExitCode, p.Criteria, p.Goal)
	if p.Output != "" {
		s += fmt.Sprintf(" output=%q", p.Output)
	}
	if d.Draft.Target != "" {
		s += " BAD TARGET " + d.Draft.Target
	}
	return s
}

// critiqueStep makes step i of a simulated plan a critique of an earlier
// step (the first step stays as it is: it has nothing to judge).
func critiqueStep(st *event.Step, i int) {
	if i == 0 {
		return
	}
	target := fmt.Sprintf("s%d", i-1)
	st.Kind, st.Run, st.Target, st.Criteria = event.KindCritique, "", target, "it worked"
	st.DependsOn = append(st.DependsOn, target)
	st.Idempotent, st.Creates, st.Capabilities = false, "", nil
}

// verdict records a planner's verdict on a critique attempt: pass, fail,
// error (no_planner), or a verdict this version does not know.
func (m *sim) verdict(r *Run, st *Step, attempt int) {
	if st.Status == StepAssigned && m.rng.IntN(2) == 0 {
		m.add(event.PlanClaimed, r.ID, "planner", event.PlanClaimedData{Until: m.now.Add(time.Minute), Source: "llm", Step: st.Spec.ID, Attempt: attempt})
		return
	}
	d := event.CritiqueRecordedData{Step: st.Spec.ID, Attempt: attempt, Verdict: event.VerdictPass, Judgement: "fine"}
	switch m.rng.IntN(8) {
	case 0, 1:
		d.Verdict, d.Judgement = event.VerdictFail, "not fine"
	case 2:
		d.Verdict, d.Judgement, d.Code, d.Error = event.VerdictError, "", event.NoPlanner, "nobody"
	case 3:
		d.Verdict = "maybe"
	}
	m.add(event.CritiqueRecorded, r.ID, "planner", d)
}

// claim folds a planner's plan.claimed of a critique attempt.
func (sc *script) claim(t *testing.T, a args) []string {
	run, step := a.pos[0], a.pos[1]
	return sc.fold(event.PlanClaimed, run, "planner-1", event.PlanClaimedData{Until: sc.now.Add(time.Minute), Source: "llm",
		Step: step, Attempt: a.int(t, 2)}, sc.stepLine(step))
}

// TestSimWithCritiques: over random histories with critique steps (their
// verdicts pass, fail, error, unknown, and planners' claims), a snapshot
// taken anywhere then the rest folds to the state and decisions of a fold
// from zero; statuses move only along the tables; every end has a known
// code; no critique holds a slot (noOvercommit).
func TestSimWithCritiques(t *testing.T) {
	seeds := 80
	if testing.Short() {
		seeds = 10
	}
	seen := map[event.Type]int{}
	verdicts := map[StepStatus]int{}
	for seed := range uint64(seeds) {
		m := newSim(seed, noOvercommit(t))
		m.critiques = true
		for range 300 {
			m.step()
		}
		events := m.l.events
		full := foldAll(events)
		want := mustSnapshot(t, full)
		wantDecisions := decisionsOf(full, m.now, m.epoch)
		for _, k := range []int{len(events) / 3, len(events) / 2, 2 * len(events) / 3} {
			s, err := UnmarshalSnapshot(mustSnapshot(t, foldAll(events[:k])))
			if err != nil {
				t.Fatalf("seed %d cut %d: %v", seed, k, err)
			}
			for _, ev := range events[k:] {
				s.Apply(ev)
			}
			if got := mustSnapshot(t, s); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: snapshot at %d then the rest differs from folding from zero:\n got %s\nwant %s", seed, k, got, want)
			}
			if got := decisionsOf(s, m.now, m.epoch); got != wantDecisions {
				t.Fatalf("seed %d cut %d: decisions differ:\n got %s\nwant %s", seed, k, got, wantDecisions)
			}
		}
		s := policied()
		s.TrackChanges()
		prev := map[string][]StepStatus{}
		for _, ev := range events {
			seen[ev.Type]++
			s.Apply(ev)
			for _, c := range s.TakeChanges().Runs {
				r := c.Run
				if (r.Status == RunFailed || r.Status == RunCancelled) && !r.Code.Known() {
					t.Fatalf("seed %d: run %s %s with code %q", seed, r.ID, r.Status, r.Code)
				}
				if c.Plan || len(prev[r.ID]) != len(r.Steps) {
					prev[r.ID] = make([]StepStatus, len(r.Steps))
					for i, st := range r.Steps {
						prev[r.ID][i] = st.Status
					}
				}
				for _, i := range c.Steps {
					st := r.Steps[i]
					if was := prev[r.ID][i]; was != st.Status && !was.CanMove(st.Status) {
						t.Fatalf("seed %d seq %d (%s): step %s/%s moved %s → %s", seed, ev.Seq, ev.Type, r.ID, st.Spec.ID, was, st.Status)
					}
					if st.Status == StepFailed && !st.Code.Known() {
						t.Fatalf("seed %d: step %s/%s failed with code %q", seed, r.ID, st.Spec.ID, st.Code)
					}
					if isCritique(st) && ev.Type == event.CritiqueRecorded && prev[r.ID][i] != st.Status {
						verdicts[st.Status]++
					}
					prev[r.ID][i] = st.Status
				}
			}
		}
	}
	for _, typ := range []event.Type{event.CritiqueRequested, event.CritiqueRecorded, event.PlanClaimed} {
		if seen[typ] == 0 {
			t.Errorf("no history has a %s", typ)
		}
	}
	// Under -short the histories are too few to reach every verdict.
	for _, st := range []StepStatus{StepSucceeded, StepFailed, StepPending} {
		if verdicts[st] == 0 && !testing.Short() {
			t.Errorf("no verdict made a critique step %s: %v", st, verdicts)
		}
	}
}
