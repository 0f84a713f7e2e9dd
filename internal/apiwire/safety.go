package apiwire

import (
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// PolicyRequest asks policy.show for one version of the policy; Version 0
// asks for the one in force.
type PolicyRequest struct {
	Version int64 `json:"version,omitempty"`
}

// PolicyVersion is one version of the policy in the ledger: a folded
// policy.applied.
type PolicyVersion struct {
	event.PolicyRef
	Name string `json:"name"`
	// Source is apply, bootstrap or remember (event.PolicyFrom*).
	Source string `json:"source"`
	Reason string `json:"reason,omitempty"`
	// Signer applied it; Time is its stream time; Seq its ledger position.
	Signer string    `json:"signer"`
	Time   time.Time `json:"time"`
	Seq    uint64    `json:"seq"`
	// Run and Step name the approval a remembered rule came from.
	Run  string `json:"run,omitempty"`
	Step string `json:"step,omitempty"`
	// Text is the policy file (policy.show only).
	Text string `json:"text,omitempty"`
}

// PolicyListRequest pages policy.list (newest first).
type PolicyListRequest struct {
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// GatesRequest filters and pages gates.list: the open gates, oldest
// first; of one run (an id or a unique prefix) and one step when given.
type GatesRequest struct {
	Run    string `json:"run,omitempty"`
	Step   string `json:"step,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// Gate is an open gate and what an operator needs to answer it.
type Gate struct {
	Run  string `json:"run"`
	Goal string `json:"goal,omitempty"`
	// Step is the gated step; "" for a plan gate.
	Step     string         `json:"step,omitempty"`
	Attempt  int            `json:"attempt,omitempty"`
	Revision int            `json:"revision,omitempty"`
	Kind     event.GateKind `json:"kind"`
	// Subject is what an answer must name (event.GateSubject).
	Subject string          `json:"subject"`
	Policy  event.PolicyRef `json:"policy,omitzero"`
	Verdict *event.Verdict  `json:"verdict,omitempty"`
	// Spec is the step as it would run (its command, cwd, env, file edit).
	Spec *event.Step `json:"spec,omitempty"`
	// Approvals is how many distinct operators must accept; Approvers
	// those who have.
	Approvals    int      `json:"approvals"`
	Approvers    []string `json:"approvers,omitempty"`
	NotSubmitter bool     `json:"not_submitter,omitempty"`
	// Submitter submitted the run.
	Submitter string           `json:"submitter,omitempty"`
	Opened    time.Time        `json:"opened"`
	Expires   time.Time        `json:"expires,omitzero"`
	OnExpiry  event.GateAction `json:"on_expiry,omitempty"`
	// Reason says why the step is held, for people (the verdict's why, or
	// the lost attempt of a needs-decision gate).
	Reason string `json:"reason,omitempty"`
	// ToolHash, for a tool step, is the hash of the pinned definition the
	// gate was judged with: Subject binds it (event.ToolGateSubject).
	ToolHash string `json:"tool_hash,omitempty"`
}
