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
