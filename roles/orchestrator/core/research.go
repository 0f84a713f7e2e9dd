package core

import (
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
)

// Research steps (protocol version 8). A research step is an executor's
// step like any other: the policy judges its sources against
// scopes.network before it is assigned (policy.JudgeStep denies one
// outside it, rule network, so the step fails with a policy verdict and
// is never assigned), and its task.finished carries the sources it
// fetched, which the fold keeps on the step when it succeeds.
//
// A synthesise step is scheduled as a critique (critique.go): when its
// target, the research step, is done, the leader emits
// critique.requested with Kind synthesise, the research step's
// questions and the sources it fetched; a planner claims it, writes the
// notes (kb.noted) and records the verdict (critique.recorded), which
// the fold takes as the step's result. So the playbook's DAG research →
// synthesise → execute → validate is four steps of one plan.

// foldSources keeps the sources a research step's attempt fetched when
// it succeeded, and forgets them otherwise.
func foldSources(st *Step, to StepStatus, d event.TaskFinishedData) {
	if st.Spec.Kind != event.KindResearch {
		return
	}
	st.Sources = nil
	if to == StepSucceeded {
		st.Sources = slices.Clone(d.Sources)
	}
}

// synthesis fills a synthesise step's request: its kind, the questions
// of its target research step and the sources that step fetched.
func synthesis(req *event.CritiqueRequestedData, st, target *Step) {
	if st.Spec.Kind != event.KindSynthesise {
		return
	}
	req.Kind = event.KindSynthesise
	req.Questions = slices.Clone(target.Spec.Questions)
	req.Sources = slices.Clone(target.Sources)
}
