package core

import (
	"fmt"
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// bootstrap records the leader's policy (text; nil: the shipped default)
// as the first one (policy.applied, source bootstrap). A text that does
// not parse is recorded by nobody: agentd checks its --policy file before
// it starts, so that cannot come from it.
func (d *decider) bootstrap(text []byte) {
	if text == nil {
		text = policy.DefaultYAML()
	}
	p, err := policy.Parse(text, "policy")
	if err != nil {
		return
	}
	d.emit(policyKey(0, "", ""), event.PolicyRecorded, "", "", event.PolicyAppliedData{
		Base: 0, Name: p.Name, Hash: p.Hash(), Text: string(text), Source: event.PolicyFromBootstrap,
		Reason: "the leader's policy, recorded while the ledger held none"})
}

// admit judges a ready step with the policy in force and assigns it,
// gates it, or has it denied (rule 6 of Decide). An approval of exactly
// the step's subject stands for every attempt of it; none overrides a
// deny (a plan approval covers the steps the policy confirms only).
func (d *decider) admit(r *Run, st *Step) {
	pf := d.s.Policy
	ref := pf.Ref()
	spec, mem, err := d.resolveMemory(r, st) // memoryref.go
	if err != nil {
		d.refuseMemory(r, st, ref, err)
		return
	}
	subject := st.gateSubject(ref)
	if mem != nil {
		subject = event.GateSubject(spec, ref)
	}
	toolHash := d.s.toolHash(spec) // tools.go: a tool step's answer binds its definition
	subject = event.BindToolHash(subject, toolHash)
	v := d.s.judge(spec, subject)
	if v.Action != policy.Deny && st.Approved != "" && st.Approved == subject { // no approval overrides a deny
		if st.Remember != "" && mem == nil && d.remember(r, st) {
			return // judged again under the policy with the rule
		}
		d.assign(r, st, spec, mem, ref, subject, slices.Clone(st.Approvers), toolHash)
		return
	}
	if v.Action == policy.Allow {
		d.assign(r, st, spec, mem, ref, "", nil, toolHash)
		return
	}
	g := event.GateOpenedData{Decision: d.decision(), Step: st.Spec.ID, Attempt: st.Attempt + 1,
		Revision: r.Revision, Kind: event.GatePolicy, Subject: subject, Policy: ref, Verdict: wireVerdict(v),
		Approvals: v.Approvals, NotSubmitter: v.NotSubmitter, Memory: mem, ToolHash: toolHash}
	if mem != nil {
		g.Command = spec.Run
	}
	if gt := pf.parsed.Gates; v.Action == policy.Confirm && gt.Timeout > 0 {
		g.Expires, g.OnExpiry = d.now.Add(gt.Timeout), event.GateAction(gt.OnTimeout)
	}
	d.emit(gateKey(r.ID, st.Spec.ID, st.Attempt+1, st.Gates+1, ref.Version), event.GateOpened, r.ID, "", g)
}

// remember records the policy with the narrowest allow rule of the
// approved step's command added (policy.applied, source remember), and
// reports whether it did: a command no rule can name exactly runs on its
// approval alone.
func (d *decider) remember(r *Run, st *Step) bool {
	pf := d.s.Policy
	name := "remembered " + r.ID + "/" + st.Spec.ID
	reason := "accepted with remember by " + st.Remember
	text, err := policy.Remember([]byte(pf.Text), st.Spec.Run, st.Spec.Cwd, name, reason)
	if err != nil {
		return false
	}
	p, err := policy.Parse(text, "remembered")
	if err != nil {
		return false
	}
	d.emit(policyKey(pf.Version, r.ID, st.Spec.ID), event.PolicyRecorded, r.ID, "", event.PolicyAppliedData{
		Base: pf.Version, Name: p.Name, Hash: p.Hash(), Text: string(text), Source: event.PolicyFromRemember,
		Reason: reason, Step: st.Spec.ID})
	return true
}

// expire closes a step's gate whose time is up (gate.closed with its
// OnExpiry), or wakes Decide when it will be.
func (d *decider) expire(r *Run, st *Step) {
	g := st.Gate
	if g.Expires.IsZero() || g.OnExpiry == "" {
		return
	}
	if d.now.Before(g.Expires) {
		d.wakeAt(g.Expires)
		return
	}
	d.emit(closeKey(r.ID, st.Spec.ID, g.Number), event.GateClosed, r.ID, "", event.GateClosedData{
		Decision: d.decision(), Step: st.Spec.ID, Subject: g.Subject, Action: g.OnExpiry,
		Code: CodeGateExpired.Wire(), Reason: fmt.Sprintf("no answer within %s", g.Expires.Sub(g.Opened))})
}

// subjectCache is a step's gate subject as computed for a policy and a
// command: a ready step that waits for a slot is admitted by every
// Decide, and hashing its spec each time made a wide plan's settling
// quadratic in hashing (BenchmarkSettle/join).
type subjectCache struct {
	ref     event.PolicyRef
	run     string
	subject string
}

// gateSubject is event.GateSubject of st's spec under the policy ref.
// The spec of a step changes in place only by an operator's edit of its
// command (gate edit); a new revision makes new steps.
func (st *Step) gateSubject(ref event.PolicyRef) string {
	c := &st.subject
	if c.subject == "" || c.ref != ref || c.run != st.Spec.Run {
		*c = subjectCache{ref: ref, run: st.Spec.Run, subject: event.GateSubject(st.Spec, ref)}
	}
	return c.subject
}
