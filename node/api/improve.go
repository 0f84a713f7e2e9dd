package api

// Self-improvement queries (roles/improve, docs/improve.md): the
// proposals and the settings they change, as every ledger node folds them.
const (
	// MethodProposalsList answers the proposals, newest first, at most
	// MaxProposals, without their policy texts (ProposalsRequest →
	// []improve.Proposal).
	MethodProposalsList = "proposals.list"
	// MethodProposalsShow answers one proposal in full, every lifecycle
	// state with it (ProposalRequest → improve.Proposal).
	MethodProposalsShow = "proposals.show"
	// MethodImproveSettings answers the settings proposals change: the
	// approved notes, the retired automatic ones, the step defaults by
	// family and the evaluation's interval (struct{} → improve.State
	// without proposals).
	MethodImproveSettings = "improve.settings"
)

// MaxProposals caps proposals.list.
const MaxProposals = 500

// ProposalsRequest filters proposals.list: Status, when set, keeps the
// proposals of that status.
type ProposalsRequest struct {
	Status string `json:"status,omitempty"`
}

// ProposalRequest names a proposal for proposals.show.
type ProposalRequest struct {
	ID string `json:"id"`
}
