package orchestrator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
