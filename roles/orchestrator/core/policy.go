package core

import (
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// PolicyInForce is the safety policy the ledger holds: the text of its
// newest accepted policy.applied, parsed. Snapshots keep the text and parse
// it again when read, so they stay deterministic and small.
type PolicyInForce struct {
	// Version is its place in the ledger's history: 1 for the first
	// policy applied, Base+1 for each later one.
	Version int64  `json:"version"`
	Name    string `json:"name,omitempty"`
	// Hash is roles/policy's hash of the policy (checked against Text).
	Hash string `json:"hash"`
	// Text is the policy file as applied.
	Text string `json:"text"`
	// Source is apply, bootstrap or remember (event.PolicyFrom*).
	Source string `json:"source"`
	// Seq is the ledger position of its policy.applied.
	Seq uint64 `json:"seq"`

	parsed *policy.Policy
}

// Ref names the policy in force for events.
func (p *PolicyInForce) Ref() event.PolicyRef {
	return event.PolicyRef{Version: p.Version, Hash: p.Hash}
}

// Parsed is the policy, parsed, carrying its ledger version.
func (p *PolicyInForce) Parsed() *policy.Policy { return p.parsed }

// parsePolicy parses the text of a policy.applied, refusing one whose hash
// is not the text's: a judge must judge with exactly the policy named.
func parsePolicy(text, hash string, version int64) (*policy.Policy, bool) {
	p, err := policy.Parse([]byte(text), "policy.applied")
	if err != nil || p.Hash() != hash {
		return nil, false
	}
	return p.WithVersion(version), true
}

// foldPolicyApplied makes the policy of a policy.applied (an
// administrator's) or a policy.recorded (a leader's) the one in force, by
// the one rule every reader of the ledger folds with (policy.Applied:
// Base is the version in force; a leader's only as a bootstrap into an
// empty history or a remembered rule naming its run and step; the text
// parses to its hash); otherwise it is ignored and counted. A remembered
// rule clears its step's Remember. Open policy and plan gates are void
// under the new policy (voidGates).
func foldPolicyApplied(s *State, ev event.Event) {
	cur := int64(0)
	if s.Policy != nil {
		cur = s.Policy.Version
	}
	p, d, err := policy.Applied(cur, ev)
	if err != nil {
		s.Ignored++
		return
	}
	s.Policy = &PolicyInForce{Version: p.Version, Name: d.Name, Hash: d.Hash, Text: d.Text,
		Source: d.Source, Seq: ev.Seq, parsed: p}
	if d.Source == event.PolicyFromRemember {
		if _, _, asked := s.step(ev.Run, d.Step); asked != nil {
			asked.Remember = "" // the request is answered
		}
	}
	s.voidGates()
}

// voidGates closes the policy and plan gates a new policy makes stale:
// their subjects name the old version, so no answer could count any more.
// A gated step is pending again, to be judged under the new policy
// (assigned, gated anew, or denied); a run at its plan gate waits for a
// new one if the new policy still asks for it.
func (s *State) voidGates() {
	for _, r := range s.activeRuns() {
		if r.Gate != nil {
			r.Gate = nil
			s.touch(r)
		}
		for i, st := range r.Steps {
			if st.Status == StepGated && st.Gate != nil && st.Gate.Kind == event.GatePolicy && s.setStepStatus(r, i, StepPending) {
				st.Error, st.Code, st.Class = "", "", ""
				s.setWait(r, i)
			}
		}
	}
}

// maxVerdicts bounds the memo of verdicts a State keeps (judge).
const maxVerdicts = 4096

// judge is the verdict of the policy in force on spec, whose gate subject
// under that policy is subject: judgeStep, memoized by subject (the
// subject names the step's every judged field and the policy's version
// and hash, and judging is pure, so a memoized verdict is the verdict).
// Decide and the fold of assignments judge the same steps again and
// again; the memo is not part of the state's value (not in snapshots).
//
// A tool step is judged with its pinned definition (judgeToolPinned), and
// memoized under the subject bound to that definition's hash.
func (s *State) judge(spec event.Step, subject string) policy.Verdict {
	m, pin, pinned := s.toolPin(spec)
	key := subject
	if pinned {
		key = event.BindToolHash(subject, pin.Hash)
	}
	if v, ok := s.verdicts[key]; ok {
		return v
	}
	var v policy.Verdict
	if pinned {
		v = judgeToolPinned(s.Policy.parsed, spec, m, pin) // tools.go
	} else {
		v = judgeStep(s.Policy.parsed, spec)
	}
	if s.verdicts == nil || len(s.verdicts) >= maxVerdicts {
		s.verdicts = make(map[string]policy.Verdict)
	}
	s.verdicts[key] = v
	return v
}

// judgeStep is the policy's verdict on a step, in its working directory
// as the plan gives it: policy.JudgeStep, the judgement the executor
// makes again before running it. (A tool step whose definition is pinned
// is judged by judgeToolPinned.)
func judgeStep(p *policy.Policy, spec event.Step) policy.Verdict {
	return p.JudgeStep(spec, spec.Cwd)
}

// worse reports whether a is stricter than b: action, then level.
func worse(a, b policy.Verdict) bool {
	if a.Action != b.Action {
		return a.Action > b.Action
	}
	return a.Level > b.Level
}

// wireVerdict is a verdict as a gate records it.
func wireVerdict(v policy.Verdict) *event.Verdict {
	w := &event.Verdict{Action: v.Action.String(), Level: v.Level.String(), Rule: v.Rule, Why: v.Why,
		Reversible: v.Reversible, Unresolved: v.Unresolved}
	for _, h := range v.Highlights {
		w.Highlights = append(w.Highlights, event.Highlight{Text: h.Text, Flags: h.Flags,
			Start: h.Span.Start, End: h.Span.End, Rule: h.Rule, Why: h.Why})
	}
	return w
}
