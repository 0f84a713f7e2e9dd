package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Memory references (docs/memory.md): a step's command, check and
// criteria may read a fact with ${memory:SCOPE/KEY}. The
// leader resolves them when it judges the step, so that the policy judges
// — and a gate shows — the command that will run, with each value
// shell-quoted (event.ApplyMemory); gate.opened and task.assigned record
// the values (event.MemoryValue), and every fold and replay applies the
// recorded values instead of reading memory again. A reference that
// cannot be resolved — a missing fact, a quarantined one, a bad scope —
// fails the step at once with the reason (a gate that opens closed, rule
// "memory"): a quarantined fact never reaches a command or a prompt.

// Facts resolves a step's memory references: the memory fold
// (roles/memory.Memory) of the leader's node.
type Facts interface {
	// MemoryValue resolves the reference "SCOPE/KEY" of a step of run
	// at now; a quarantined, missing or expired fact is an error that
	// says why.
	MemoryValue(run, ref string, now time.Time) (event.MemoryValue, error)
}

// RuleMemory names the verdict of a step whose memory references cannot
// be resolved.
const RuleMemory = "memory"

// errNoFacts: the leader has no memory to resolve references with.
var errNoFacts = errors.New("this leader folds no memory")

// resolveMemory returns st's spec with its memory references resolved,
// and their values; the spec as it is, and no values, when it has none.
func (d *decider) resolveMemory(r *Run, st *Step) (event.Step, []event.MemoryValue, error) {
	refs := event.MemoryRefs(st.Spec)
	if len(refs) == 0 {
		return st.Spec, nil, nil
	}
	if d.facts == nil {
		return st.Spec, nil, fmt.Errorf("step %s reads ${memory:%s}: %w", st.Spec.ID, refs[0], errNoFacts)
	}
	values := make([]event.MemoryValue, 0, len(refs))
	for _, ref := range refs {
		v, err := d.facts.MemoryValue(r.ID, ref, d.now)
		if err != nil {
			return st.Spec, nil, fmt.Errorf("step %s: %w", st.Spec.ID, err)
		}
		values = append(values, v)
	}
	return event.ApplyMemory(st.Spec, values), values, nil
}

// refuseMemory fails a step whose references cannot be resolved: a gate
// that opens closed, with a deny verdict of rule "memory" that says why.
func (d *decider) refuseMemory(r *Run, st *Step, ref event.PolicyRef, err error) {
	v := &event.Verdict{Action: policy.Deny.String(), Level: "high", Rule: RuleMemory, Why: err.Error()}
	g := event.GateOpenedData{Decision: d.decision(), Step: st.Spec.ID, Attempt: st.Attempt + 1,
		Revision: r.Revision, Kind: event.GatePolicy, Subject: st.gateSubject(ref), Policy: ref, Verdict: v, Approvals: 1}
	d.emit(gateKey(r.ID, st.Spec.ID, st.Attempt+1, st.Gates+1, ref.Version), event.GateOpened, r.ID, "", g)
}

// resolvedSpec is the spec a fold judges for a decision that recorded
// memory values: st's spec with them applied.
func resolvedSpec(st *Step, values []event.MemoryValue) event.Step {
	return event.ApplyMemory(st.Spec, values)
}
