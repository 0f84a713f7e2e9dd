package event

import "time"

// Self-improvement (protocol version 8, docs/improve.md): the leader
// evaluates the ledger with fixed rules and proposes a change with its
// evidence (ProposalCreated); operators approve or reject it
// (ProposalApproved, ProposalRejected); the leader applies an approved one
// as the ordinary event of its setting (TuningChanged, or a policy.recorded
// of source proposal) and says so (ProposalApplied); it then watches the
// error rate of what the change touched and ends the proposal implemented
// (ProposalImplemented) or reverts it (ProposalReverted, with the inverse
// change). Nothing a proposal names changes before operators approved it:
// every fold takes a TuningChanged only for an approved proposal.
const (
	// ProposalCreated is a leader's proposal (ProposalCreatedData).
	ProposalCreated Type = "proposal.created"
	// ProposalApproved is one operator's approval (ProposalDecidedData);
	// the approver is the signer.
	ProposalApproved Type = "proposal.approved"
	// ProposalRejected is an operator's rejection (ProposalDecidedData).
	ProposalRejected Type = "proposal.rejected"
	// ProposalApplied: the leader applied an approved proposal
	// (ProposalAppliedData), after validating it again.
	ProposalApplied Type = "proposal.applied"
	// ProposalImplemented: the change held up against its baseline
	// (ProposalOutcomeData).
	ProposalImplemented Type = "proposal.implemented"
	// ProposalReverted: the change made things worse, or could not be
	// applied, and the leader undid it (ProposalOutcomeData).
	ProposalReverted Type = "proposal.reverted"
	// TuningChanged changes the planner notes, the step defaults or a
	// family's plan template (TuningChangedData): the event an approved proposal, or its revert,
	// applies through.
	TuningChanged Type = "tuning.changed"
	// ImproveEval is an operator's request to the leader's evaluation: run
	// now, or every so often (ImproveEvalData).
	ImproveEval Type = "improve.eval"
	// ProposalDecidedFor is an operator's approval or rejection given
	// through the ui node's dashboard (ProposalDecidedForData): the ui
	// node signs it on behalf of the operator it authenticated, and every
	// fold counts it as that operator's proposal.approved or
	// proposal.rejected.
	ProposalDecidedFor Type = "proposal.decided_for"
)

// ChangeKind is what a proposal changes.
type ChangeKind string

// Change kinds. Append-only.
const (
	// ChangeNotes adds, edits, pins or retires a planner note.
	ChangeNotes ChangeKind = "notes"
	// ChangeTemplate replaces a plan family's template: the plan a goal
	// of the family with neither a plan file nor text is planned from.
	ChangeTemplate ChangeKind = "template"
	// ChangeStepDefaults sets a family's default step timeout or retries.
	ChangeStepDefaults ChangeKind = "step_defaults"
	// ChangePolicy is a new policy version that narrows the one in force,
	// or adds the narrow allow of one command operators keep approving.
	ChangePolicy ChangeKind = "policy"
	// ChangeRepository changes files of a repository: applied as an
	// ordinary git run (its file writes on a branch of their own, pushed,
	// and a pull request) whose goal an operator submits naming the
	// proposal (GoalSubmittedData.Proposal); a person merges the pull
	// request, nothing merges by itself.
	ChangeRepository ChangeKind = "repository"
)

// Settings a change may name (Change.Setting). Validation refuses any
// other (roles/improve).
const (
	SettingPlannerNotes    = "planner.notes"
	SettingDefaultsTimeout = "defaults.timeout"
	SettingDefaultsRetries = "defaults.retries"
	SettingPolicy          = "policy"
	SettingTemplate        = "templates"
	SettingRepository      = "repository"
)

// Note operations (NoteChange.Op).
const (
	// NoteAdd adds an approved note.
	NoteAdd = "add"
	// NoteEdit replaces the text of a note (an approved one, or an
	// automatic one, which then becomes approved).
	NoteEdit = "edit"
	// NotePin makes an automatic note approved, with its current text.
	NotePin = "pin"
	// NoteRetire removes a note; a retired automatic note is no longer
	// shown to planners.
	NoteRetire = "retire"
	// NoteRestore undoes a pin or retire of an automatic note (the
	// rollback of one): the approved copy goes, the automatic one is
	// shown again.
	NoteRestore = "restore"
)

// Change is a typed change to one setting.
type Change struct {
	// Kind says which field below is set.
	Kind ChangeKind `json:"kind"`
	// Setting is the setting the change touches (SettingPlannerNotes, …).
	Setting string `json:"setting"`
	// Note is a ChangeNotes change.
	Note *NoteChange `json:"note,omitempty"`
	// Defaults is a ChangeStepDefaults change.
	Defaults *StepDefaults `json:"defaults,omitempty"`
	// Policy is a ChangePolicy change.
	Policy *PolicyChange `json:"policy,omitempty"`
	// Template is a ChangeTemplate change.
	Template *TemplateChange `json:"template,omitempty"`
	// Repository is a ChangeRepository change.
	Repository *RepoChange `json:"repository,omitempty"`
}

// RepoChange changes files of a repository through a git run: Git is
// the run's git block (the repository, its base branch, the remote the
// branch is pushed to and the pull request), Files what the run writes,
// one file.write step each, in order. A rollback carries no files: the
// pull request is the forge's to close, the loop undoes nothing.
type RepoChange struct {
	Git   GitSpec    `json:"git"`
	Files []RepoFile `json:"files,omitempty"`
}

// RepoFile is one file a RepoChange writes: Path relative to the
// repository's root, Content its whole new content.
type RepoFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// NoteChange changes one planner note.
type NoteChange struct {
	// Op is NoteAdd, NoteEdit, NotePin or NoteRetire.
	Op string `json:"op"`
	// ID names the note: "auto:<shape>" for an automatic note, any other
	// id for an approved one.
	ID string `json:"id"`
	// Text is the note (add, edit, pin).
	Text string `json:"text,omitempty"`
	// Family, when set, shows the note only to plans of that family.
	Family string `json:"family,omitempty"`
}

// StepDefaults are the defaults of a plan family's steps that set none
// (Family "" is every family without its own).
type StepDefaults struct {
	Family string `json:"family"`
	// Timeout, when set, bounds one attempt of a step without a timeout.
	Timeout Duration `json:"timeout,omitzero"`
	// Retries, when set, is the retries of a step that sets none.
	Retries *int `json:"retries,omitempty"`
}

// PolicyChange is a new policy version.
type PolicyChange struct {
	// Base is the version it replaces.
	Base int64 `json:"base"`
	// Text is the whole new policy (YAML) and Hash its hash.
	Text string `json:"text"`
	Hash string `json:"hash"`
	// Command is the one command an added allow rule allows (the
	// gate approve --remember rule), Dir where it ran.
	Command string `json:"command,omitempty"`
	Dir     string `json:"dir,omitempty"`
}

// TemplateChange replaces a family's template: the plan file (YAML or
// JSON, the plan decoder's grammar) that a goal of the family submitted
// with neither a plan file nor text is planned from (roles/planner).
type TemplateChange struct {
	Family string `json:"family"`
	// Plan is the plan file's text; empty: the family has no template
	// (the rollback of a family's first template).
	Plan string `json:"plan"`
	// Hash is the SHA-256 of Plan in hex (empty with no plan): what
	// proposal show and improve settings name the template by.
	Hash string `json:"hash,omitempty"`
}

// Rate is an error rate over a window: Errors of Total, from From to To.
type Rate struct {
	Errors int       `json:"errors"`
	Total  int       `json:"total"`
	From   time.Time `json:"from,omitzero"`
	To     time.Time `json:"to,omitzero"`
}

// Validation says how a proposal was checked and what the check found.
type Validation struct {
	// Method is "replay" (recorded durations and exits against the new
	// value), "rejudge" (recorded commands under the new policy) or
	// "forbidden-checks" (notes and templates: replay reads recorded
	// model answers, so it proves nothing there).
	Method string `json:"method"`
	// Summary says it for people.
	Summary string `json:"summary"`
	// Pass, Fail and Retry count the replayed attempts that would have
	// passed, failed or been retried under the new value.
	Pass  int `json:"pass,omitempty"`
	Fail  int `json:"fail,omitempty"`
	Retry int `json:"retry,omitempty"`
	// Unknown counts replayed attempts the record cannot judge (one that
	// timed out before the new, longer timeout: how long it would have
	// run is not recorded).
	Unknown int `json:"unknown,omitempty"`
	// Judged counts the commands judged again, NewAllows those the new
	// policy allows that the old one did not.
	Judged    int `json:"judged,omitempty"`
	NewAllows int `json:"new_allows,omitempty"`
}

// ProposalCreatedData is a proposal.
type ProposalCreatedData struct {
	// ID is the proposal id, derived from what it is about (the same
	// finding makes the same id on any leader).
	ID string `json:"id"`
	// Pattern is the evaluation rule that found it.
	Pattern string `json:"pattern"`
	// Subject is what the pattern is about: a command shape, a step, a
	// command, a family.
	Subject string `json:"subject"`
	// Family is the plan family it concerns, if one.
	Family string `json:"family,omitempty"`
	// Change is what approval applies; Rollback what a revert applies.
	Change   Change `json:"change"`
	Rollback Change `json:"rollback"`
	// Evidence are the ledger positions of the events it rests on.
	Evidence []uint64 `json:"evidence"`
	// RootCause, ExpectedEffect: for people.
	RootCause      string `json:"root_cause"`
	ExpectedEffect string `json:"expected_effect"`
	// Risk is low, medium, high or critical (the policy levels).
	Risk string `json:"risk"`
	// Approvers is how many distinct operators must approve it (the
	// policy's approvals for its risk).
	Approvers int `json:"approvers"`
	// Validation is the check made at creation.
	Validation Validation `json:"validation"`
	// Baseline is the error rate of what it touches before it.
	Baseline Rate `json:"baseline"`
	// DraftedBy says who wrote the root cause, expected effect and risk
	// note: DraftedByModel (the planner's model) or DraftedByRules (the
	// rule that found it); empty on a node with no model configured.
	DraftedBy string `json:"drafted_by,omitempty"`
	// ChangeBy says whose change is proposed: DraftedByModel when the
	// model's draft of a change of the rule's kind passed every check the
	// rule's own change passes, DraftedByRules otherwise.
	ChangeBy string `json:"change_by,omitempty"`
	// RiskNote is the model's words on the risk (the level is the rule's).
	RiskNote string `json:"risk_note,omitempty"`
	// DraftNote says why the model's draft, or its change, was not used.
	DraftNote string `json:"draft_note,omitempty"`
	// Epoch is the leader epoch of the orchestrator that emitted it
	// (optional; protocol version 8): every fold ignores it when a newer
	// leader.elected came before it in the ledger (Decision.FencedBy), as
	// it ignores a deposed leader's decisions. Absent (0) in events of
	// builds before it, which are folded as before.
	Epoch uint64 `json:"epoch,omitempty"`
}

// Who drafted a proposal (ProposalCreatedData.DraftedBy, ChangeBy).
const (
	DraftedByModel = "model"
	DraftedByRules = "rules"
)

// ProposalDecidedData is an operator's approval or rejection.
type ProposalDecidedData struct {
	Proposal string `json:"proposal"`
	Reason   string `json:"reason,omitempty"`
}

// The actions of a ProposalDecidedForData.
const (
	ProposalApprove = "approve"
	ProposalReject  = "reject"
)

// ProposalDecidedForData is an operator's decision on a proposal that a ui
// node signs on their behalf, having authenticated them (an API token of
// their operator credential): the decision is Operator's, exactly as if
// they had signed a proposal.approved (Action approve) or a
// proposal.rejected (Action reject).
type ProposalDecidedForData struct {
	// Operator is the operator id the ui node authenticated: the one who
	// decides.
	Operator string `json:"operator"`
	// Action is ProposalApprove or ProposalReject.
	Action string `json:"action"`
	ProposalDecidedData
}

// ProposalAppliedData says that a proposal's change is in force.
type ProposalAppliedData struct {
	Proposal string `json:"proposal"`
	// Validation is the check made again at apply.
	Validation Validation `json:"validation"`
	// Policy is the policy version the change made, for a policy change.
	Policy int64 `json:"policy,omitempty"`
	// Epoch is the leader epoch of the orchestrator that emitted it
	// (optional; protocol version 8): every fold ignores it when a newer
	// leader.elected came before it in the ledger (Decision.FencedBy), as
	// it ignores a deposed leader's decisions. Absent (0) in events of
	// builds before it, which are folded as before.
	Epoch uint64 `json:"epoch,omitempty"`
	// Run is the git run that applied a repository change, PullRequest
	// its pull request: the forge's URL, or remote:branch when no forge
	// opened one.
	Run         string `json:"run,omitempty"`
	PullRequest string `json:"pull_request,omitempty"`
}

// ProposalOutcomeData ends an applied proposal: implemented, or reverted.
type ProposalOutcomeData struct {
	Proposal string `json:"proposal"`
	// Baseline and After are the error rates compared.
	Baseline Rate `json:"baseline"`
	After    Rate `json:"after"`
	// Threshold is the worsening (a fraction: 0.25) that reverts.
	Threshold float64 `json:"threshold"`
	// Reason says it for people, with the numbers.
	Reason string `json:"reason"`
	// Epoch is the leader epoch of the orchestrator that emitted it
	// (optional; protocol version 8): every fold ignores it when a newer
	// leader.elected came before it in the ledger (Decision.FencedBy), as
	// it ignores a deposed leader's decisions. Absent (0) in events of
	// builds before it, which are folded as before.
	Epoch uint64 `json:"epoch,omitempty"`
}

// TuningChangedData applies a change (or a revert's rollback) to the
// planner notes, the step defaults or a family's template.
type TuningChangedData struct {
	// Proposal is the approved proposal applied, or reverted.
	Proposal string `json:"proposal"`
	// Revert: Change is the proposal's rollback.
	Revert bool   `json:"revert,omitempty"`
	Change Change `json:"change"`
	// Epoch is the leader epoch of the orchestrator that emitted it
	// (optional; protocol version 8): every fold ignores it when a newer
	// leader.elected came before it in the ledger (Decision.FencedBy), as
	// it ignores a deposed leader's decisions. Absent (0) in events of
	// builds before it, which are folded as before.
	Epoch uint64 `json:"epoch,omitempty"`
}

// ImproveEvalData asks the leader's evaluation to run now, or sets how
// often it runs (0 leaves it).
type ImproveEvalData struct {
	Now   bool     `json:"now,omitempty"`
	Every Duration `json:"every,omitzero"`
}

// PolicyFromProposal: a leader applied an approved proposal's policy
// (PolicyAppliedData.Proposal names it).
const PolicyFromProposal = "proposal"
