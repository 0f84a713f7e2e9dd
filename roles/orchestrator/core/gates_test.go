package core

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/policy"
)

// gateFixture is one run with a gated step (rm -rf build) on a state
// holding a policy that wants two approvers, neither the submitter.
type gateFixture struct {
	t  *testing.T
	l  ledger
	s  *State
	at time.Time
}

const twoApprovers = `name: two
approvals:
  high: {approvers: 2, not_submitter: true}
rules:
  - pattern: "rm -rf"
    level: high
    action: confirm
`

func newGateFixture(t *testing.T) *gateFixture {
	f := &gateFixture{t: t, s: NewState(), at: t0}
	f.s.Apply(policyApplied(0, []byte(twoApprovers)))
	f.add(event.ExecutorOnline, "", "n1", event.ExecutorOnlineData{Slots: 4})
	f.add(event.LeaderElected, "", "o1", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"})
	f.add(event.GoalSubmitted, "r", "alice", event.GoalSubmittedData{Goal: "g"})
	f.add(event.PlanProposed, "r", "p", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
		{ID: "wipe", Kind: event.KindShell, Run: "rm -rf build"}}}})
	// Accepted as a leader's earlier acceptance would be, so that the
	// step is ready and not yet judged (a Decide that accepts judges it
	// at once, accept.go).
	f.add(event.PlanAccepted, "r", "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
	return f
}

func (f *gateFixture) add(typ event.Type, run, node string, payload any) {
	f.s.Apply(f.l.add(typ, run, node, f.at, payload))
}

// decideAndFold runs Decide, folds its decisions back, and returns them.
func (f *gateFixture) decideAndFold() []Decision {
	ds, _ := Decide(f.s, f.at, 1, nil)
	for _, d := range ds {
		f.s.Apply(f.l.commit(d.Draft, "o1"))
	}
	return ds
}

// neverAssigned checks, at this point, that Decide (now and for an hour
// of later times, and after a snapshot round trip) assigns nothing, and
// that forged assignments — without an approval, with an approval the
// state does not hold, or judged with another policy — are ignored.
func (f *gateFixture) neverAssigned(when string) {
	f.t.Helper()
	for _, s := range []*State{f.s, roundTrip(f.t, f.s)} {
		for _, later := range []time.Duration{0, time.Second, time.Minute, time.Hour} {
			ds, _ := Decide(s, f.at.Add(later), 1, nil)
			for _, d := range ds {
				if d.Draft.Type == event.TaskAssigned {
					f.t.Fatalf("%s: Decide assigns the gated step: %s", when, d.Key)
				}
			}
		}
	}
	st := f.s.Runs["r"].Step("wipe")
	ref := f.s.Policy.Ref()
	for _, forged := range []event.TaskAssignedData{
		{Step: st.Spec, Attempt: st.Attempt + 1, Node: "n1", Policy: ref},
		{Step: st.Spec, Attempt: st.Attempt + 1, Node: "n1", Policy: ref, Approved: event.GateSubject(st.Spec, ref), Approvers: []string{"bob"}},
		{Step: st.Spec, Attempt: st.Attempt + 1, Node: "n1", Policy: event.PolicyRef{Version: 9, Hash: "sha256:x"}},
		{Step: st.Spec, Attempt: st.Attempt + 1, Node: "n1"},
	} {
		forged.Epoch = 1
		c := roundTrip(f.t, f.s)
		before := c.Ignored
		data, _ := json.Marshal(forged)
		c.Apply(event.Event{Seq: f.l.seq + 1, ID: "forged", Type: event.TaskAssigned, Run: "r", Node: "o1", Time: f.at, Data: data})
		if got := c.Runs["r"].Step("wipe"); got.Status == StepAssigned || c.Ignored != before+1 {
			f.t.Fatalf("%s: a forged assignment %+v was applied (status %s)", when, forged, got.Status)
		}
	}
}

func roundTrip(t *testing.T, s *State) *State {
	t.Helper()
	c, err := UnmarshalSnapshot(mustSnapshot(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *gateFixture) answer(by string, action event.GateAction, subject string) {
	f.at = f.at.Add(time.Second)
	f.add(event.GateDecided, "r", by, event.GateDecidedData{Step: "wipe", Subject: subject, Action: action})
}

// TestGatedStepNeverRunsBeforeApproval: from the moment a step is judged
// confirm until its gate has its approvals, no decision assigns it and no
// forged assignment is folded; after them it is assigned exactly once,
// with its approvers, also after a restart between approval and
// assignment.
func TestGatedStepNeverRunsBeforeApproval(t *testing.T) {
	f := newGateFixture(t)
	f.neverAssigned("ready, before the gate opens")
	ds := f.decideAndFold()
	if len(ds) != 1 || ds[0].Draft.Type != event.GateOpened {
		t.Fatalf("decisions %v, want one gate.opened", ds)
	}
	st := f.s.Runs["r"].Step("wipe")
	if st.Status != StepGated || st.Gate == nil || st.Gate.Approvals != 2 || !st.Gate.NotSubmitter {
		t.Fatalf("step %s gate %+v, want gated, 2 approvals, not the submitter", st.Status, st.Gate)
	}
	subject := st.Gate.Subject
	f.neverAssigned("gated")
	f.answer("bob", event.GateAccept, "sha256:stale")
	f.neverAssigned("after an answer naming another subject")
	f.answer("alice", event.GateAccept, subject)
	f.neverAssigned("after the submitter's accept")
	f.answer("bob", event.GateAccept, subject)
	f.neverAssigned("after one of two approvals")
	f.answer("bob", event.GateAccept, subject)
	f.neverAssigned("after the same approver again")
	if got := f.s.Runs["r"].Step("wipe").Gate.Approvers; len(got) != 1 {
		t.Fatalf("approvers %v, want bob once", got)
	}
	f.answer("carol", event.GateAccept, subject)
	restarted := roundTrip(t, f.s)
	for _, s := range []*State{f.s, restarted} {
		ds, _ := Decide(s, f.at, 1, nil)
		if len(ds) != 1 || ds[0].Draft.Type != event.TaskAssigned {
			t.Fatalf("decisions %v, want one assignment", ds)
		}
		var a event.TaskAssignedData
		if err := json.Unmarshal(ds[0].Draft.Data, &a); err != nil {
			t.Fatal(err)
		}
		if a.Approved != subject || len(a.Approvers) != 2 || a.Approvers[0] != "bob" || a.Approvers[1] != "carol" || a.Policy != s.Policy.Ref() {
			t.Fatalf("assignment %+v, want approved %s by bob, carol", a, subject)
		}
	}
	ds, _ = Decide(f.s, f.at, 1, nil)
	f.s.Apply(f.l.commit(ds[0].Draft, "o1"))
	f.s.Apply(f.l.commit(ds[0].Draft, "o1")) // a second copy
	if st := f.s.Runs["r"].Step("wipe"); st.Status != StepAssigned || st.Attempt != 1 {
		t.Fatalf("after the assignment: %s attempt %d", st.Status, st.Attempt)
	}
	if more, _ := Decide(f.s, f.at, 1, nil); len(more) != 0 {
		t.Fatalf("decisions after the assignment: %v", more)
	}
}

// TestDeniedStepNeverRuns: a deny at the gate fails the step with class
// policy, never assigned, and fails the run.
func TestDeniedStepNeverRuns(t *testing.T) {
	f := newGateFixture(t)
	f.decideAndFold()
	f.answer("bob", event.GateDeny, f.s.Runs["r"].Step("wipe").Gate.Subject)
	st := f.s.Runs["r"].Step("wipe")
	if st.Status != StepFailed || st.Class != event.ClassPolicy || st.Code != CodeGateDenied || st.Attempt != 0 {
		t.Fatalf("denied step: %s class %s code %s attempt %d", st.Status, st.Class, st.Code, st.Attempt)
	}
	ds := f.decideAndFold()
	if len(ds) != 1 || ds[0].Draft.Type != event.RunFinished {
		t.Fatalf("decisions %v, want the run finished", ds)
	}
	if _, ok := f.s.Runs["r"]; ok {
		t.Fatal("the run goes on")
	}
}

// TestPolicyBootstrap: a leader records its configured policy only while
// the ledger holds none; a second bootstrap, an apply on a stale base and
// a text that is not its hash are ignored; snapshots keep the policy.
func TestPolicyBootstrap(t *testing.T) {
	s := NewState()
	ds, _ := DecideWith(s, t0, 1, nil, Options{Policy: []byte(twoApprovers)})
	if len(ds) != 1 || ds[0].Draft.Type != event.PolicyRecorded {
		t.Fatalf("decisions %v, want policy.applied", ds)
	}
	var l ledger
	s.Apply(l.commit(ds[0].Draft, "o1"))
	if s.Policy == nil || s.Policy.Version != 1 || s.Policy.Name != "two" || s.Policy.Source != event.PolicyFromBootstrap {
		t.Fatalf("policy in force %+v", s.Policy)
	}
	if ds, _ := DecideWith(s, t0, 1, nil, Options{}); len(ds) != 0 {
		t.Fatalf("a second bootstrap: %v", ds)
	}
	def := policy.Default()
	for _, c := range []struct {
		typ event.Type
		d   event.PolicyAppliedData
	}{
		// A leader's bootstrap over a held policy.
		{event.PolicyRecorded, event.PolicyAppliedData{Base: 1, Name: "x", Hash: def.Hash(), Text: string(policy.DefaultYAML()), Source: event.PolicyFromBootstrap}},
		// A leader's "apply".
		{event.PolicyRecorded, event.PolicyAppliedData{Base: 1, Name: "x", Hash: def.Hash(), Text: string(policy.DefaultYAML()), Source: event.PolicyFromApply}},
		// A stale base.
		{event.PolicyApplied, event.PolicyAppliedData{Base: 0, Name: "x", Hash: def.Hash(), Text: string(policy.DefaultYAML()), Source: event.PolicyFromApply}},
		// A hash that is not the text's.
		{event.PolicyApplied, event.PolicyAppliedData{Base: 1, Name: "x", Hash: "sha256:00", Text: string(policy.DefaultYAML()), Source: event.PolicyFromApply}},
		// A remembered rule naming no run and step.
		{event.PolicyRecorded, event.PolicyAppliedData{Base: 1, Name: "x", Hash: def.Hash(), Text: string(policy.DefaultYAML()), Source: event.PolicyFromRemember}},
	} {
		d := c.d
		before := s.Ignored
		s.Apply(l.add(c.typ, "", "admin", t0, d))
		if s.Ignored != before+1 || s.Policy.Version != 1 {
			t.Errorf("%+v: applied (version %d)", d, s.Policy.Version)
		}
	}
	s.Apply(l.add(event.PolicyApplied, "", "admin", t0, event.PolicyAppliedData{Base: 1, Name: "default",
		Hash: def.Hash(), Text: string(policy.DefaultYAML()), Source: event.PolicyFromApply}))
	if s.Policy.Version != 2 || s.Policy.Hash != def.Hash() || s.Policy.Parsed().Version != 2 {
		t.Fatalf("after apply: %+v", s.Policy)
	}
	c := roundTrip(t, s)
	if c.Policy.Parsed() == nil || c.Policy.Parsed().Hash() != def.Hash() || c.Policy.Parsed().Version != 2 {
		t.Fatal("the snapshot lost the parsed policy")
	}
}

// TestGateNeedsWhatThePolicyAsks: a gate.opened that asks fewer approvers
// than the policy (a buggy or hostile leader) still needs the policy's,
// not from the submitter; one that says confirm for a step the policy
// denies fails the step.
func TestGateNeedsWhatThePolicyAsks(t *testing.T) {
	f := newGateFixture(t)
	st := f.s.Runs["r"].Step("wipe")
	ref := f.s.Policy.Ref()
	f.add(event.GateOpened, "r", "o1", event.GateOpenedData{Decision: event.Decision{Epoch: 1}, Step: "wipe", Attempt: 1,
		Kind: event.GatePolicy, Subject: event.GateSubject(st.Spec, ref), Policy: ref,
		Verdict: &event.Verdict{Action: "confirm", Level: "low"}, Approvals: 1})
	if g := f.s.Runs["r"].Step("wipe").Gate; g == nil || g.Approvals != 2 || !g.NotSubmitter {
		t.Fatalf("gate %+v, want 2 approvers, not the submitter", g)
	}

	f2 := &gateFixture{t: t, s: NewState(), at: t0}
	f2.s.Apply(policyApplied(0, []byte("rules:\n  - pattern: curl\n    action: deny\n")))
	f2.add(event.LeaderElected, "", "o1", event.LeaderElectedData{Decision: event.Decision{Epoch: 1}, Leader: "o1"})
	f2.add(event.GoalSubmitted, "r", "alice", event.GoalSubmittedData{Goal: "g"})
	f2.add(event.PlanProposed, "r", "p", event.PlanProposedData{Revision: 1, Plan: event.Plan{Steps: []event.Step{
		{ID: "get", Kind: event.KindShell, Run: "curl https://example.com"}}}})
	f2.add(event.PlanAccepted, "r", "o1", event.PlanAcceptedData{Decision: event.Decision{Epoch: 1}, Revision: 1})
	st2 := f2.s.Runs["r"].Step("get")
	ref2 := f2.s.Policy.Ref()
	f2.add(event.GateOpened, "r", "o1", event.GateOpenedData{Decision: event.Decision{Epoch: 1}, Step: "get", Attempt: 1,
		Kind: event.GatePolicy, Subject: event.GateSubject(st2.Spec, ref2), Policy: ref2,
		Verdict: &event.Verdict{Action: "confirm", Level: "high"}, Approvals: 1})
	if st2.Status != StepFailed || st2.Class != event.ClassPolicy || st2.Code != CodePolicyDenied {
		t.Fatalf("step %s class %s code %s, want failed by policy", st2.Status, st2.Class, st2.Code)
	}
}

// TestAnswersThroughTheUI: an answer a ui node signs on an operator's
// behalf (gate.decided_for) counts as that operator's — the submitter's
// does not count on a not-submitter gate, the same operator counts once
// whichever way they answered, and the ui node itself is no approver.
func TestAnswersThroughTheUI(t *testing.T) {
	f := newGateFixture(t)
	f.decideAndFold()
	subject := f.s.Runs["r"].Step("wipe").Gate.Subject
	via := func(operator string) {
		f.at = f.at.Add(time.Second)
		f.add(event.GateDecidedFor, "r", "ui-1", event.GateDecidedForData{Operator: operator,
			GateDecidedData: event.GateDecidedData{Step: "wipe", Subject: subject, Action: event.GateAccept}})
	}
	via("alice") // the submitter
	via("")      // names nobody
	via("bob")
	f.answer("bob", event.GateAccept, subject) // bob again, signing himself
	f.neverAssigned("after one operator's approvals, through the ui and not")
	if got := f.s.Runs["r"].Step("wipe").Gate.Approvers; len(got) != 1 || got[0] != "bob" {
		t.Fatalf("approvers %v, want bob once", got)
	}
	via("carol")
	ds, _ := Decide(f.s, f.at, 1, nil)
	var a event.TaskAssignedData
	if len(ds) != 1 || json.Unmarshal(ds[0].Draft.Data, &a) != nil || len(a.Approvers) != 2 || a.Approvers[1] != "carol" {
		t.Fatalf("decisions %v (%+v), want the step assigned, approved by bob and carol", ds, a)
	}
}
