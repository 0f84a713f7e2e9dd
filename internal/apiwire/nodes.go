package apiwire

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
)

// MethodNodesList pages through the cluster's nodes (agentctl node ls).
const MethodNodesList = "nodes.list"

// NodeSummary is one node as nodes.list shows it.
type NodeSummary = Summary

// Summary is one row of nodes.list: a node as the ledger records it,
// merged with the answering node's live gossip view.
type Summary struct {
	Name         string   `json:"name"`
	Roles        []string `json:"roles"`
	Capabilities []string `json:"capabilities"`
	// Slots and Queue its executor announced (0: no executor known).
	Slots int `json:"slots"`
	Queue int `json:"queue,omitempty"`
	// SlotsUsed counts the tasks assigned to or running on it, as the
	// answering node's orchestrator sees them; absent when the answering
	// node cannot tell.
	SlotsUsed *int `json:"slots_used,omitempty"`
	// State is alive, suspect, dead or left: the recorded state, made
	// newer by the live view (Merge). Dead only after a node.failed
	// event. Empty: nothing is known (no gossip, not the answering node).
	State string `json:"state"`
	// Since is when State began (as recorded, or as the answering node
	// saw it).
	Since time.Time `json:"since,omitzero"`
	// Recorded is the state the leader recorded in the ledger; Gossip
	// the answering node's live view of it (empty: not a member it
	// knows, or it runs no gossip).
	Recorded string `json:"recorded_state,omitempty"`
	Gossip   string `json:"gossip_state,omitempty"`
	// Reason is the recorded membership event's reason.
	Reason string `json:"reason,omitempty"`
	// Leader marks the orchestrator leader, and Epoch its leader epoch.
	Leader      bool   `json:"leader,omitempty"`
	Epoch       uint64 `json:"epoch,omitempty"`
	Version     string `json:"version,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	// Addr is its gossip address.
	Addr string `json:"addr,omitempty"`
	// Draining: asked to drain (node.drain, or its own announcement).
	Draining    bool   `json:"draining,omitempty"`
	DrainReason string `json:"drain_reason,omitempty"`
	// ClockSkew is how far its clock is ahead of the stream's (negative:
	// behind), in nanoseconds, as the answering ledger node measured it
	// from its messages since that node started; absent when none came.
	ClockSkew *time.Duration `json:"clock_skew,omitempty"`
	// Ready says whether the node answered that it can make progress,
	// NotReady why not ("<check>: <reason>"), and Checks its readiness
	// checks (node.info): absent when the node was not asked or did not
	// answer. The answering node fills its own; agentctl asks the others.
	Ready    *bool           `json:"ready,omitempty"`
	NotReady string          `json:"not_ready,omitempty"`
	Checks   []health.Status `json:"checks,omitempty"`
	// Alarms are the codes of the alarms in force on the node, as the
	// ledger records them (agentctl alarm ls tells more).
	Alarms []event.Alarm `json:"alarms,omitempty"`
}

// Page sizes of nodes.list: a request's limit is clamped to the maximum;
// 0 asks for the default.
const (
	DefaultNodesPage = 1000
	MaxNodesPage     = 1000
)

// NodesListRequest asks for a page of nodes in name order (the cursor is
// a node name; Limit defaults to and is capped at MaxNodesPage).
type NodesListRequest = CursorRequest

// CursorRequest asks for one page of a listing that pages by cursor alone.
type CursorRequest struct {
	// Cursor is the Next of the previous page: the page starts after it.
	Cursor string `json:"cursor,omitempty"`
	// Limit caps the page (the listing's default when 0, at most its
	// maximum); pages are cut by size too.
	Limit int `json:"limit,omitempty"`
}

// Validate reports what the node cannot answer: an ErrBadRequest with a
// hint.
func (r CursorRequest) Validate() error {
	if r.Limit < 0 {
		return WithHint(fmt.Errorf("%w: limit %d is negative", ErrBadRequest, r.Limit), "ask with a limit of 0 (the default) or more")
	}
	return nil
}

// NodesPage is a page of nodes.list: the nodes, and what the answering
// node knows of the cluster.
type NodesPage[T any] struct {
	Page[T]
	// Leader is the orchestrator leader and Epoch its leader epoch, as
	// the answering node's ledger has them ("" and 0: none elected).
	Leader string `json:"leader,omitempty"`
	Epoch  uint64 `json:"epoch,omitempty"`
	// Node is the answering node; Gossip its gossip address, empty when
	// it runs no gossip (then states come from the ledger alone).
	Node   string `json:"node"`
	Gossip string `json:"gossip,omitempty"`
}
