package core

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestStepDefaultsFromApprovedProposal: once an approved proposal's
// tuning.changed set family nightly's default timeout and retries, a plan
// of that family gets them on its steps that set none (and its steps
// that set their own keep them); a plan of another family, and a plan
// folded before, do not; a tuning.changed for a proposal nobody approved
// changes nothing.
func TestStepDefaultsFromApprovedProposal(t *testing.T) {
	var l ledger
	s := policied()
	two := 2
	timeout := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout,
		Defaults: &event.StepDefaults{Family: "nightly", Timeout: event.Duration(4 * time.Minute)}}
	retries := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsRetries,
		Defaults: &event.StepDefaults{Family: "nightly", Retries: &two}}
	propose := func(id string, c event.Change) {
		s.Apply(l.add(event.ProposalCreated, "", "o1", t0, event.ProposalCreatedData{ID: id, Pattern: "timeouts", Family: "nightly",
			Approvers: 1, Risk: "medium", Change: c, Rollback: event.Change{Kind: c.Kind, Setting: c.Setting, Defaults: &event.StepDefaults{Family: "nightly"}}}))
	}
	plan := func(run, family string) *Run {
		s.Apply(l.add(event.GoalSubmitted, run, "op", t0, event.GoalSubmittedData{Goal: "g", Family: family}))
		s.Apply(l.add(event.PlanProposed, run, "p1", t0, event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Family: family, Steps: []event.Step{
			{ID: "fetch", Kind: event.KindShell, Run: "./fetch.sh", OnFailure: event.OnFailureAbort},
			{ID: "own", Kind: event.KindShell, Run: "./own.sh", Timeout: event.Duration(time.Second), Retries: 1, OnFailure: event.OnFailureAbort},
		}}}))
		return s.Runs[run]
	}
	propose("p-t", timeout)
	propose("p-r", retries)
	// Not approved: nothing.
	s.Apply(l.add(event.TuningChanged, "", "o1", t0, event.TuningChangedData{Proposal: "p-t", Change: timeout}))
	if r := plan("before", "nightly"); r.Steps[0].Spec.Timeout != 0 || r.Steps[0].Spec.Retries != 0 {
		t.Fatalf("an unapproved change gave the step timeout %s retries %d", r.Steps[0].Spec.Timeout, r.Steps[0].Spec.Retries)
	}
	for _, id := range []string{"p-t", "p-r"} {
		s.Apply(l.add(event.ProposalApproved, "", "alice", t0, event.ProposalDecidedData{Proposal: id}))
	}
	s.Apply(l.add(event.TuningChanged, "", "o1", t0, event.TuningChangedData{Proposal: "p-t", Change: timeout}))
	s.Apply(l.add(event.TuningChanged, "", "o1", t0, event.TuningChangedData{Proposal: "p-r", Change: retries}))
	r := plan("after", "nightly")
	if got := r.Steps[0].Spec; got.Timeout.Std() != 4*time.Minute || got.Retries != 2 {
		t.Errorf("a step of nightly without its own values: timeout %s retries %d, want 4m0s and 2", got.Timeout, got.Retries)
	}
	if got := r.Steps[1].Spec; got.Timeout.Std() != time.Second || got.Retries != 1 {
		t.Errorf("a step with its own values: timeout %s retries %d, want 1s and 1", got.Timeout, got.Retries)
	}
	if got := plan("other", "daily").Steps[0].Spec; got.Timeout != 0 || got.Retries != 0 {
		t.Errorf("a step of another family: timeout %s retries %d, want none", got.Timeout, got.Retries)
	}
	if got := s.Runs["before"].Steps[0].Spec; got.Timeout != 0 {
		t.Errorf("a plan folded before the change got timeout %s", got.Timeout)
	}
}

// TestStepDefaultsFromProposalDecidedFor: an approval a ui node signed on
// an operator's behalf (proposal.decided_for) approves a proposal in the
// orchestrator's fold as the operator's own would: its tuning.changed then
// sets the family's default timeout.
func TestStepDefaultsFromProposalDecidedFor(t *testing.T) {
	var l ledger
	s := policied()
	timeout := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout,
		Defaults: &event.StepDefaults{Family: "nightly", Timeout: event.Duration(4 * time.Minute)}}
	s.Apply(l.add(event.ProposalCreated, "", "o1", t0, event.ProposalCreatedData{ID: "p-t", Pattern: "timeouts", Family: "nightly",
		Approvers: 1, Risk: "medium", Change: timeout, Rollback: event.Change{Kind: timeout.Kind, Setting: timeout.Setting, Defaults: &event.StepDefaults{Family: "nightly"}}}))
	s.Apply(l.add(event.ProposalDecidedFor, "", "ui1", t0, event.ProposalDecidedForData{Operator: "alice", Action: event.ProposalApprove,
		ProposalDecidedData: event.ProposalDecidedData{Proposal: "p-t"}}))
	s.Apply(l.add(event.TuningChanged, "", "o1", t0, event.TuningChangedData{Proposal: "p-t", Change: timeout}))
	s.Apply(l.add(event.GoalSubmitted, "r", "op", t0, event.GoalSubmittedData{Goal: "g", Family: "nightly"}))
	s.Apply(l.add(event.PlanProposed, "r", "p1", t0, event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Family: "nightly", Steps: []event.Step{
		{ID: "fetch", Kind: event.KindShell, Run: "./fetch.sh", OnFailure: event.OnFailureAbort}}}}))
	if got := s.Runs["r"].Steps[0].Spec.Timeout.Std(); got != 4*time.Minute {
		t.Errorf("a step of nightly after an approval through the ui node: timeout %s, want 4m0s", got)
	}
}

// TestDeposedLeaderStepDefaultsFenced: a tuning.changed of a leader that
// a newer leader.elected deposed sets no step default in the core's fold
// (like the deposed leader's assignments); the leader in force's does.
func TestDeposedLeaderStepDefaultsFenced(t *testing.T) {
	var l ledger
	s := policied()
	timeout := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout,
		Defaults: &event.StepDefaults{Family: "nightly", Timeout: event.Duration(4 * time.Minute)}}
	s.Apply(l.add(event.LeaderElected, "", "o1", t0, event.LeaderElectedData{Decision: event.Decision{Epoch: 7}, Leader: "o1"}))
	s.Apply(l.add(event.ProposalCreated, "", "o1", t0, event.ProposalCreatedData{ID: "p-t", Pattern: "timeouts", Family: "nightly", Epoch: 7,
		Approvers: 1, Risk: "medium", Change: timeout, Rollback: event.Change{Kind: timeout.Kind, Setting: timeout.Setting, Defaults: &event.StepDefaults{Family: "nightly"}}}))
	s.Apply(l.add(event.ProposalApproved, "", "alice", t0, event.ProposalDecidedData{Proposal: "p-t"}))
	s.Apply(l.add(event.LeaderElected, "", "o2", t0, event.LeaderElectedData{Decision: event.Decision{Epoch: 8}, Leader: "o2"}))
	s.Apply(l.add(event.TuningChanged, "", "o1", t0, event.TuningChangedData{Proposal: "p-t", Change: timeout, Epoch: 7}))
	plan := func(run string) time.Duration {
		s.Apply(l.add(event.GoalSubmitted, run, "op", t0, event.GoalSubmittedData{Goal: "g", Family: "nightly"}))
		s.Apply(l.add(event.PlanProposed, run, "p1", t0, event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Family: "nightly", Steps: []event.Step{
			{ID: "fetch", Kind: event.KindShell, Run: "./fetch.sh", OnFailure: event.OnFailureAbort}}}}))
		return s.Runs[run].Steps[0].Spec.Timeout.Std()
	}
	if got := plan("deposed"); got != 0 {
		t.Fatalf("a deposed leader's tuning.changed gave the step timeout %s", got)
	}
	s.Apply(l.add(event.TuningChanged, "", "o2", t0, event.TuningChangedData{Proposal: "p-t", Change: timeout, Epoch: 8}))
	if got := plan("in-force"); got != 4*time.Minute {
		t.Fatalf("the leader in force's tuning.changed gave the step timeout %s, want 4m0s", got)
	}
}
