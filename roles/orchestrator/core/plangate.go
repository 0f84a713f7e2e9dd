package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// planSubject is what a plan gate's answers must name: the revision and
// the gate subject of every step, in plan order, under the policy ref.
func planSubject(r *Run, ref event.PolicyRef) string {
	h := sha256.New()
	h.Write([]byte("plan\x00" + r.ID + "\x00" + strconv.Itoa(r.Revision) + "\x00"))
	for _, st := range r.Steps {
		h.Write([]byte(event.GateSubject(st.Spec, ref) + "\x00"))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// planVerdict judges every step of r and sums them up as a plan gate
// shows it: the worst verdict, how many steps are not allowed, and the
// approvals the strictest of them needs (at least one).
func (s *State) planVerdict(r *Run) (v policy.Verdict, notAllowed int) {
	p, ref := s.Policy.parsed, s.Policy.Ref()
	v = p.Judge("")
	v.Why = "every step is allowed"
	worst, approvals, notSubmitter := -1, 0, false
	for i, st := range r.Steps {
		sv := s.judge(st.Spec, event.GateSubject(st.Spec, ref))
		if sv.Action == policy.Allow {
			continue
		}
		notAllowed++
		approvals, notSubmitter = max(approvals, sv.Approvals), notSubmitter || sv.NotSubmitter
		if worst < 0 || worse(sv, v) {
			v, worst = sv, i
		}
	}
	if worst >= 0 {
		v.Why = fmt.Sprintf("%d of %d steps need more than allow; the worst, step %s: %s", notAllowed, len(r.Steps), r.Steps[worst].Spec.ID, v.Why)
	}
	v.Approvals, v.NotSubmitter = max(approvals, 1), notSubmitter
	return v, notAllowed
}

// planHeld reports whether the run waits at its plan gate (approve_plans),
// opening it (gate.opened, kind plan) when the policy asks for one, or
// ends the run whose plan operators denied. A held run gets no gates nor
// assignments for its steps.
func (d *decider) planHeld(r *Run) bool {
	pf := d.s.Policy
	if pf == nil || pf.parsed.ApprovePlans == policy.PlansNone || r.PlanApproved == r.Revision {
		return false
	}
	if r.PlanDenied {
		if r.PlanEnd == CodeGateExpired {
			d.stopRun(r, RunFailed, CodeGateExpired, "plan not approved before its gate expired")
		} else {
			d.stopRun(r, RunFailed, CodePlanDenied, "plan denied by an operator")
		}
		return true
	}
	ref := pf.Ref()
	subject := planSubject(r, ref)
	if g := r.Gate; g != nil && g.Subject == subject {
		switch {
		case g.Expires.IsZero():
		case d.now.Before(g.Expires):
			d.wakeAt(g.Expires)
		default:
			d.emit(closeKey(r.ID, "", g.Number), event.GateClosed, r.ID, "", event.GateClosedData{
				Decision: d.decision(), Subject: g.Subject, Action: event.GateDeny,
				Code: CodeGateExpired.Wire(), Reason: fmt.Sprintf("no approval of the plan within %s", g.Expires.Sub(g.Opened))})
		}
		return true
	}
	v, notAllowed := d.s.planVerdict(r)
	if r.Gate == nil && pf.parsed.ApprovePlans == policy.PlansByLevel && notAllowed == 0 {
		return false
	}
	// No plan gate yet, or the open one shows what is no longer the plan
	// (a step's command was edited at a needs-decision gate, or the
	// policy changed): open one anew.
	g := event.GateOpenedData{Decision: d.decision(), Revision: r.Revision, Kind: event.GatePlan,
		Subject: subject, Policy: ref, Verdict: wireVerdict(v), Approvals: v.Approvals, NotSubmitter: v.NotSubmitter}
	if gt := pf.parsed.Gates; gt.Timeout > 0 {
		g.Expires, g.OnExpiry = d.now.Add(gt.Timeout), event.GateDeny // a plan not approved in time is not run
	}
	d.emit(gateKey(r.ID, "", 0, r.Gates+1, ref.Version), event.GateOpened, r.ID, "", g)
	return true
}

// foldPlanGateOpened holds a running run at its plan gate; ignored unless
// it names the run's revision under the policy in force, the revision is
// not approved, and no plan gate showing the plan as it is now is open.
// The gate's subject, verdict and approvals are the fold's own (the plan
// as it is when the gate opens: a step may have changed while the
// decision was on its way), never fewer approvers than the leader asked.
func foldPlanGateOpened(s *State, r *Run, d event.GateOpenedData, t time.Time) {
	if !r.goesOn() || d.Revision != r.Revision || r.PlanApproved == r.Revision || s.Policy == nil || d.Policy != s.Policy.Ref() {
		s.Ignored++
		return
	}
	subject := planSubject(r, d.Policy)
	if r.Gate != nil && r.Gate.Subject == subject {
		s.Ignored++
		return
	}
	v, _ := s.planVerdict(r)
	r.Gates++
	r.Gate = &Gate{Kind: event.GatePlan, Number: r.Gates, Subject: subject, Policy: d.Policy, Verdict: wireVerdict(v),
		Approvals: max(d.Approvals, v.Approvals, 1), NotSubmitter: d.NotSubmitter || v.NotSubmitter, Opened: t, Reason: v.Why,
		Expires: d.Expires}
	if !d.Expires.IsZero() {
		r.Gate.OnExpiry = event.GateDeny
	}
	s.touch(r)
}

// foldPlanGateClosed ends a plan gate nobody approved in time: Decide
// fails the run (gate_expired). Ignored unless it names the open gate's
// subject.
func foldPlanGateClosed(s *State, r *Run, d event.GateClosedData) {
	if r.Gate == nil || d.Subject != r.Gate.Subject {
		s.Ignored++
		return
	}
	r.PlanDenied, r.PlanEnd, r.Gate = true, CodeGateExpired, nil
	s.touch(r)
}

// foldPlanGateDecided applies an operator's answer to a run's plan gate,
// while the gate still shows the plan as it is: accept counts as a step
// gate's does, and with the approvals in the
// revision is approved and every step records the approval of its own
// subject (the plan showed each); deny makes Decide fail the run. Edit
// and skip do not apply to a plan.
func foldPlanGateDecided(s *State, r *Run, d event.GateDecidedData, by string) {
	g := r.Gate
	if g == nil || d.Subject != g.Subject || g.Subject != planSubject(r, g.Policy) || by == "" {
		s.Ignored++
		return
	}
	switch d.Action {
	case event.GateAccept:
		if (g.NotSubmitter && by == r.Submitter) || slices.Contains(g.Approvers, by) {
			s.Ignored++
			return
		}
		g.Approvers = append(g.Approvers, by)
		if len(g.Approvers) >= g.Approvals {
			r.PlanApproved, r.Gate = r.Revision, nil
			for i, st := range r.Steps {
				if !st.Terminal() {
					st.Approved, st.Approvers = event.GateSubject(st.Spec, g.Policy), append([]string(nil), g.Approvers...)
					s.touchStep(r, i)
				}
			}
		}
		s.touch(r)
	case event.GateDeny:
		r.PlanDenied, r.PlanEnd, r.Gate = true, CodePlanDenied, nil
		s.touch(r)
	default:
		s.Ignored++
	}
}
