package improve

import (
	"slices"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestDecidedForCountsAsTheOperator: a proposal.decided_for the ui node
// signs counts as the operator it names approving or rejecting, exactly as
// their own proposal.approved or proposal.rejected: an operator who
// approves both with the CLI and from the dashboard counts once, a second
// operator's approval from the dashboard completes the proposal, and a
// rejection from the dashboard rejects. One naming no operator, or with no
// known action, changes nothing.
func TestDecidedForCountsAsTheOperator(t *testing.T) {
	p := plant(t)
	p.emit(event.ProposalCreated, "", timeoutProposal("p-1"))
	p.emit(event.ProposalCreated, "", timeoutProposal("p-2"))
	for_ := func(operator, action, id, reason string) {
		p.emit(event.ProposalDecidedFor, "", event.ProposalDecidedForData{Operator: operator, Action: action,
			ProposalDecidedData: event.ProposalDecidedData{Proposal: id, Reason: reason}})
	}
	p.add(p.operator("alice"), event.ProposalApproved, "", event.ProposalDecidedData{Proposal: "p-1"})
	for_("alice", event.ProposalApprove, "p-1", "")
	for_("", event.ProposalApprove, "p-1", "")
	for_("carol", "maybe", "p-1", "")
	if pr := p.state().Proposals["p-1"]; pr.Status != StatusPending || !slices.Equal(pr.ApprovedBy, []string{"alice"}) {
		t.Fatalf("p-1: %s approved by %v, want pending, approved by alice once", pr.Status, pr.ApprovedBy)
	}
	for_("bob", event.ProposalApprove, "p-1", "checked")
	pr := p.state().Proposals["p-1"]
	if pr.Status != StatusApproved || !slices.Equal(pr.ApprovedBy, []string{"alice", "bob"}) {
		t.Fatalf("p-1: %s approved by %v, want approved by alice and bob", pr.Status, pr.ApprovedBy)
	}
	if last := pr.History[len(pr.History)-1]; last.By != "bob" || last.Note != "checked" {
		t.Errorf("p-1's approval: by %q note %q, want bob, checked", last.By, last.Note)
	}
	for_("bob", event.ProposalReject, "p-2", "fix the mirror")
	pr = p.state().Proposals["p-2"]
	if last := pr.History[len(pr.History)-1]; pr.Status != StatusRejected || last.By != "bob" || last.Note != "fix the mirror" {
		t.Errorf("p-2: %s, last by %q note %q, want rejected by bob, fix the mirror", pr.Status, last.By, last.Note)
	}
}
