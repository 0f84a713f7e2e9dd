package api

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/node/nodes"
)

// MethodNodesList pages through the cluster's nodes (agentctl node ls).
const MethodNodesList = "nodes.list"

// NodeSummary is one node as nodes.list shows it (see nodes.Summary).
type NodeSummary = nodes.Summary

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

// NodesList reads one page of nodes.
func (c *Client) NodesList(ctx context.Context, req NodesListRequest) (*NodesPage[NodeSummary], error) {
	var p NodesPage[NodeSummary]
	if err := c.Call(ctx, MethodNodesList, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Nodes reads every node, page after page. The returned page holds them
// all, with what the answering node of the last page said of the leader.
func (c *Client) Nodes(ctx context.Context) (*NodesPage[NodeSummary], error) {
	var last *NodesPage[NodeSummary]
	var all []NodeSummary
	fetch := func(ctx context.Context, cursor string) (*Page[NodeSummary], error) {
		p, err := c.NodesList(ctx, NodesListRequest{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		last = p
		return &p.Page, nil
	}
	for n, err := range Walk(ctx, "", fetch) {
		if err != nil {
			return nil, err
		}
		all = append(all, n)
	}
	if all == nil {
		all = []NodeSummary{}
	}
	last.Items, last.Next, last.End = all, "", true
	return last, nil
}
