package core

import (
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Artifact inputs (docs/artifacts.md): the leader resolves a step's
// inputs to a hash each when it assigns the step, and records them in
// task.assigned (with the bytes the run's artifacts already hold, for the
// run's cap), so that the executor writes exactly those bytes and a
// replay sees the same. An input that cannot be resolved — no such run,
// no succeeded run of the family, no artifact of that name — fails the
// step at once with the reason (a gate that opens closed, rule
// "artifact").

// Artifacts resolves steps' inputs: the artifact fold
// (roles/artifacts.Fold) of the leader's node.
type Artifacts interface {
	// Resolve resolves one input of a step of run.
	Resolve(run string, in event.ArtifactInput) (event.ResolvedInput, error)
	// RunBytes is what run's artifacts hold, in bytes.
	RunBytes(run string) int64
}

// RuleArtifact names the verdict of a step whose inputs cannot be
// resolved.
const RuleArtifact = "artifact"

// errNoArtifacts: the leader folds no artifacts.
var errNoArtifacts = errors.New("this leader folds no artifacts")

// resolveInputs returns the step's inputs resolved, and, for a step with
// outputs, the bytes the run's artifacts hold.
func (d *decider) resolveInputs(r *Run, spec event.Step) ([]event.ResolvedInput, int64, error) {
	if len(spec.Inputs) == 0 && len(spec.Outputs) == 0 {
		return nil, 0, nil
	}
	if d.artifacts == nil {
		if len(spec.Inputs) == 0 {
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("step %s reads artifacts: %w", spec.ID, errNoArtifacts)
	}
	var out []event.ResolvedInput
	for _, in := range spec.Inputs {
		ri, err := d.artifacts.Resolve(r.ID, in)
		if err != nil {
			return nil, 0, fmt.Errorf("step %s: input %s: %w", spec.ID, in.Name, err)
		}
		out = append(out, ri)
	}
	var stored int64
	if len(spec.Outputs) > 0 {
		stored = d.artifacts.RunBytes(r.ID) // what the run's cap has left to it
	}
	return out, stored, nil
}

// refuseInputs fails a step whose inputs cannot be resolved: a gate that
// opens closed, with a deny verdict of rule "artifact" that says why.
func (d *decider) refuseInputs(r *Run, st *Step, ref event.PolicyRef, err error) {
	v := &event.Verdict{Action: policy.Deny.String(), Level: "high", Rule: RuleArtifact, Why: err.Error()}
	g := event.GateOpenedData{Decision: d.decision(), Step: st.Spec.ID, Attempt: st.Attempt + 1,
		Revision: r.Revision, Kind: event.GatePolicy, Subject: st.gateSubject(ref), Policy: ref, Verdict: v, Approvals: 1}
	d.emit(gateKey(r.ID, st.Spec.ID, st.Attempt+1, st.Gates+1, ref.Version), event.GateOpened, r.ID, "", g)
}
