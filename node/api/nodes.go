package api

import "context"

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
