package core

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Branches (event.Step.Next, protocol version 6) route a run by a step's
// outcome. The fold applies them where a step would become ready (all its
// dependencies done): a step that is not reached ends skipped there, with
// CodeBranchNotTaken, and its own dependents are settled in turn, so every
// step of a branching plan ends final and the run can finish. No event
// records the skip: it follows from the outcomes the ledger holds, so
// every node's fold (and replay) derives the same.
//
// A pending step whose dependencies are all done is not reached when
//
//   - a dependency branches to it and that branch was not taken: the
//     dependency's outcome was the other one, or the dependency was not
//     reached itself; or
//   - none of its dependencies was reached (each ended skipped with
//     CodeBranchNotTaken). A join after alternative branches has a
//     reached dependency, so it runs.
//
// A step that succeeded, or was skipped for another reason (its guard, an
// operator), takes its success branch; one that failed for good takes its
// failure branch. A failure a branch routes is handled like on_failure
// continue: the step is failed but done, its dependents run, and the run
// can still succeed.

// CodeBranchNotTaken: the step was not reached — the branch leading to it
// was not taken, or none of its dependencies was reached — and ended
// skipped without running (event.SkipBranchNotTaken).
const CodeBranchNotTaken Code = event.SkipBranchNotTaken

// branchProblem reports the first branch of the plan that the planner
// would not have let through, "" if none: a branch whose target is not a
// step that depends on the branching step (normalization adds that
// dependency), two branches on one outcome or to one target, or a step
// that branches of two steps lead to. Such a plan is invalid: Decide fails
// its run.
func (r *Run) branchProblem() string {
	from := map[string]string{}
	for _, st := range r.Steps {
		var ons []event.BranchOn
		var tos []string
		for _, b := range st.Spec.Next {
			t, ok := r.index[b.To]
			switch {
			case b.On != event.BranchOnSuccess && b.On != event.BranchOnFailure:
				return fmt.Sprintf("step %q branches on %q, neither success nor failure", st.Spec.ID, b.On)
			case !ok || !slices.Contains(r.Steps[t].Spec.DependsOn, st.Spec.ID):
				return fmt.Sprintf("step %q branches to %q, which is not a step that depends on it", st.Spec.ID, b.To)
			case slices.Contains(ons, b.On):
				return fmt.Sprintf("step %q has two branches on %s", st.Spec.ID, b.On)
			case slices.Contains(tos, b.To):
				return fmt.Sprintf("step %q has two branches to %q", st.Spec.ID, b.To)
			case from[b.To] != "":
				return fmt.Sprintf("step %q is the target of branches of both %q and %q", b.To, from[b.To], st.Spec.ID)
			}
			ons, tos = append(ons, b.On), append(tos, b.To)
			from[b.To] = st.Spec.ID
		}
	}
	return ""
}

// routeFailure makes a final failure of st that one of its branches routes
// (a failure branch) a handled one: neither failing the run nor asking for
// a replan, like on_failure continue.
func routeFailure(st *Step) {
	if branchTo(st.Spec, event.BranchOnFailure) != "" {
		st.Abort, st.Replan = false, false
	}
}

// branchTo is the target of spec's branch on outcome, "" when none.
func branchTo(spec event.Step, on event.BranchOn) string {
	for _, b := range spec.Next {
		if b.On == on {
			return b.To
		}
	}
	return ""
}

// notReached reports whether the step ended skipped because it was not
// reached.
func (st *Step) notReached() bool {
	return st.Status == StepSkipped && st.Code == CodeBranchNotTaken
}

// outcome is the branch outcome of a final step, "" when it takes no
// branch (it was not reached, or did not end succeeded, skipped or
// failed).
func (st *Step) outcome() event.BranchOn {
	switch {
	case st.notReached():
		return ""
	case st.Status == StepSucceeded, st.Status == StepSkipped:
		return event.BranchOnSuccess
	case st.Status == StepFailed:
		return event.BranchOnFailure
	}
	return ""
}

// unreached says why pending step j, whose dependencies are all done, is
// not reached ("" when it is).
func (r *Run) unreached(j int) string {
	st := r.Steps[j]
	if len(r.deps[j]) == 0 {
		return ""
	}
	reached := false
	for _, i := range r.deps[j] {
		if i < 0 {
			return ""
		}
		dep := r.Steps[i]
		for _, b := range dep.Spec.Next {
			if b.To != st.Spec.ID || dep.outcome() == b.On {
				continue
			}
			if dep.notReached() {
				return fmt.Sprintf("branch not taken: %s was not reached", dep.Spec.ID)
			}
			return fmt.Sprintf("branch not taken: %s %s, and this step is its %s branch", dep.Spec.ID, dep.Status.Wire(), b.On)
		}
		reached = reached || !dep.notReached()
	}
	if !reached {
		return "branch not taken: none of its dependencies was reached"
	}
	return ""
}

// skipUnreached ends pending step j of r skipped at t, with
// CodeBranchNotTaken, when it is not reached, and settles its dependents
// (stepDone). It reports whether it did; the caller has checked that the
// step's dependencies are all done.
func (s *State) skipUnreached(r *Run, j int, t time.Time) bool {
	why := r.unreached(j)
	if why == "" || !s.setStepStatus(r, j, StepSkipped) {
		return false
	}
	st := r.Steps[j]
	st.FinishedAt = t
	st.Error, st.Code, st.Class = why, CodeBranchNotTaken, ""
	st.ReadyAt, st.Wait = time.Time{}, ""
	s.stepDone(r, j, t)
	return true
}

// evidence is what st's outcome says of each hypothesis it tests: the
// test's success evidence when the step succeeded (supports by default),
// its failure evidence when it failed for good (refutes by default), none
// otherwise (skipped, cancelled). Nil while the step is not final, and
// when it tests nothing.
func (st *Step) evidence() []StepEvidence {
	if len(st.Spec.Tests) == 0 || !st.Terminal() {
		return nil
	}
	out := make([]StepEvidence, len(st.Spec.Tests))
	for k, t := range st.Spec.Tests {
		e := event.EvidenceNone
		switch st.Status {
		case StepSucceeded:
			e = cmp.Or(t.Success, event.EvidenceSupports)
		case StepFailed:
			e = cmp.Or(t.Failure, event.EvidenceRefutes)
		}
		out[k] = StepEvidence{Hypothesis: t.Hypothesis, Evidence: e}
	}
	return out
}

// Verdicts of a hypothesis, from the evidence its steps gave.
const (
	VerdictSupported = "supported"
	VerdictRefuted   = "refuted"
	VerdictMixed     = "mixed"
	VerdictUntested  = "untested"
)

// HypothesisView is a hypothesis of a run's plan with the evidence its
// steps gave and the verdict they make: supported (some step supports it,
// none refutes it), refuted (the reverse), mixed (both) or untested
// (neither, yet).
type HypothesisView struct {
	ID        string `json:"id"`
	Statement string `json:"statement"`
	Verdict   string `json:"verdict"`
	// Evidence lists, in plan order, the steps that test the hypothesis
	// and what each says so far.
	Evidence []HypothesisEvidence `json:"evidence"`
}

// HypothesisEvidence is one step's evidence for a hypothesis.
type HypothesisEvidence struct {
	Step     string         `json:"step"`
	Status   string         `json:"status"`
	Evidence event.Evidence `json:"evidence"`
}

// Hypotheses gives each hypothesis of plan p with its verdict and the
// evidence of every step of p that tests it, from the views of the run's
// steps (StepView.Evidence): a step without a view (the run runs another
// revision) shows status "-", and one not final yet evidence none.
func Hypotheses(p event.Plan, steps []StepView) []HypothesisView {
	views := make(map[string]*StepView, len(steps))
	for k := range steps {
		views[steps[k].ID] = &steps[k]
	}
	out := make([]HypothesisView, len(p.Hypotheses))
	at := make(map[string]int, len(p.Hypotheses))
	for k, h := range p.Hypotheses {
		out[k] = HypothesisView{ID: h.ID, Statement: h.Statement, Evidence: []HypothesisEvidence{}}
		if _, dup := at[h.ID]; !dup {
			at[h.ID] = k
		}
	}
	// One pass over the steps and their tests (a plan may have 10,000
	// steps testing 100 hypotheses each): linear in the tests.
	for _, spec := range p.Steps {
		sv := views[spec.ID]
		for j, t := range spec.Tests {
			k, ok := at[t.Hypothesis]
			if !ok {
				continue
			}
			status, evidence := "-", event.EvidenceNone
			if sv != nil {
				status = sv.Status
				if j < len(sv.Evidence) && sv.Evidence[j].Hypothesis == t.Hypothesis {
					evidence = sv.Evidence[j].Evidence // in the order of the tests
				} else {
					for _, se := range sv.Evidence {
						if se.Hypothesis == t.Hypothesis {
							evidence = se.Evidence
							break
						}
					}
				}
			}
			out[k].Evidence = append(out[k].Evidence, HypothesisEvidence{Step: spec.ID, Status: status, Evidence: evidence})
		}
	}
	for k := range out {
		v := &out[k]
		var supports, refutes bool
		for _, e := range v.Evidence {
			supports = supports || e.Evidence == event.EvidenceSupports
			refutes = refutes || e.Evidence == event.EvidenceRefutes
		}
		switch {
		case supports && refutes:
			v.Verdict = VerdictMixed
		case supports:
			v.Verdict = VerdictSupported
		case refutes:
			v.Verdict = VerdictRefuted
		default:
			v.Verdict = VerdictUntested
		}
	}
	return out
}
