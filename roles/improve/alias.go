package improve

import "github.com/agentic-dev/agentic/roles/improve/tuning"

// The proposals' fold lives in package tuning (pure: the orchestrator's
// core folds it too); these names are its.
type (
	// State is tuning.State.
	State = tuning.State
	// Proposal is tuning.Proposal.
	Proposal = tuning.Proposal
	// Status is tuning.Status.
	Status = tuning.Status
	// Note is tuning.Note.
	Note = tuning.Note
	// Transition is tuning.Transition.
	Transition = tuning.Transition
)

// Statuses (tuning's).
const (
	StatusPending     = tuning.StatusPending
	StatusApproved    = tuning.StatusApproved
	StatusRejected    = tuning.StatusRejected
	StatusApplied     = tuning.StatusApplied
	StatusImplemented = tuning.StatusImplemented
	StatusReverted    = tuning.StatusReverted
	StatusRefused     = tuning.StatusRefused
)

// Note sources (tuning's).
const (
	SourceApproved  = tuning.SourceApproved
	SourceAutomatic = tuning.SourceAutomatic
)

// NewState is tuning.NewState.
func NewState() *State { return tuning.NewState() }
