package memory

import (
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// runInfo is what the fold knows of a live run to judge the facts its
// steps write: its plan family, whether its plan is a model's and
// whether an operator overrode a policy verdict of it. Dropped when the
// run finishes.
type runInfo struct {
	// GoalFamily is the submitted goal's family, which a model's plans
	// inherit.
	GoalFamily string `json:"goal_family,omitempty"`
	// Family is the family of the accepted plan.
	Family string `json:"family,omitempty"`
	// Model is set while the accepted plan is a model's (source llm).
	Model bool `json:"model,omitempty"`
	// Overridden is set once an operator accepted or edited a gated step.
	Overridden bool `json:"overridden,omitempty"`
	// Proposed are the proposed revisions not yet accepted.
	Proposed map[int]proposal `json:"proposed,omitempty"`
}

// proposal is what the fold keeps of a plan revision until it is
// accepted.
type proposal struct {
	Model  bool   `json:"model,omitempty"`
	Family string `json:"family,omitempty"`
}

// maxProposed bounds the revisions remembered per run.
const maxProposed = 64

// proposedRef is what the fold reads of a plan.proposed.
type proposedRef struct {
	Revision int    `json:"revision"`
	Source   string `json:"source"`
	Plan     struct {
		Family string `json:"family"`
	} `json:"plan"`
}

// foldRun folds the run events that decide how its facts are judged.
func (m *Memory) foldRun(ev event.Event) {
	if ev.Run == "" {
		return
	}
	info := m.runs[ev.Run]
	if ev.Type == event.GoalSubmitted {
		var d event.GoalSubmittedData
		if ev.Decode(&d) != nil {
			return
		}
		info = &runInfo{}
		if event.ValidFamily(d.Family) == nil {
			info.GoalFamily = d.Family
		}
		if p := plan.FromGoal(d); p != nil {
			// The orchestrator plans the run from its goal: an
			// operator's plan file, revision 1, accepted before
			// (or without) any planner's proposal.
			info.Proposed = map[int]proposal{1: {Family: validFamily(p.Family)}}
		}
		m.runs[ev.Run] = info
		return
	}
	if info == nil {
		return // a run whose start this fold did not see: its facts stay quarantined
	}
	switch ev.Type {
	case event.PlanProposed:
		var d proposedRef
		if ev.Decode(&d) != nil {
			return
		}
		if info.Proposed == nil {
			info.Proposed = map[int]proposal{}
		}
		if len(info.Proposed) >= maxProposed {
			return
		}
		p := proposal{Model: d.Source != "file"}
		if event.ValidFamily(d.Plan.Family) == nil {
			p.Family = d.Plan.Family
		}
		if p.Model && p.Family == "" {
			p.Family = info.GoalFamily
		}
		info.Proposed[d.Revision] = p
	case event.PlanAccepted:
		var d event.PlanAcceptedData
		if ev.Decode(&d) != nil {
			return
		}
		p, ok := info.Proposed[d.Revision]
		if !ok {
			info.Model = true // a plan this fold did not see is judged as a model's
			return
		}
		info.Model, info.Family = p.Model, p.Family
		m.setFamily(ev.Run, p.Family)
		for rev := range info.Proposed {
			if rev <= d.Revision {
				delete(info.Proposed, rev)
			}
		}
	case event.GateDecided, event.GateDecidedFor:
		var d event.GateDecidedData
		if ev.Decode(&d) != nil {
			return
		}
		if d.Step != "" && (d.Action == event.GateAccept || d.Action == event.GateEdit) {
			info.Overridden = true
		}
	}
}

// setFamily records the family of a live run for MemoryValue ("" forgets
// the run).
func (m *Memory) setFamily(run, family string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if family == "" {
		delete(m.mu.families, run)
		return
	}
	m.mu.families[run] = family
}

// validFamily is family if it is a valid one, else "".
func validFamily(family string) string {
	if event.ValidFamily(family) != nil {
		return ""
	}
	return family
}
