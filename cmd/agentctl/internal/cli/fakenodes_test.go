package cli

import (
	"context"
	"slices"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodes"
)

// registerNodes answers nodes.list the way a node does: in name order,
// pageSize nodes a page, the cursor a node name.
func (f *fakeNode) registerNodes(s *api.Server) {
	api.HandleTyped(s, api.MethodNodesList, func(_ context.Context, req api.NodesListRequest) (api.NodesPage[api.NodeSummary], error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if err := req.Validate(); err != nil {
			return api.NodesPage[api.NodeSummary]{}, err
		}
		f.nodesPages++
		if req.Cursor == "" {
			f.nodesCalls++
			if f.nodesChange != nil {
				f.nodesChange(f, f.nodesCalls)
			}
		}
		all := slices.Clone(f.nodes)
		slices.SortFunc(all, func(a, b api.NodeSummary) int {
			if a.Name < b.Name {
				return -1
			}
			return 1
		})
		rows := nodes.After(all, req.Cursor)
		n := f.size(req.Limit)
		page := api.NodesPage[api.NodeSummary]{Leader: f.leader, Epoch: f.epoch, Node: "node-a", Gossip: "10.0.0.1:7946"}
		if len(rows) <= n {
			page.Page = api.Page[api.NodeSummary]{Items: rows, End: true}
		} else {
			page.Page = api.Page[api.NodeSummary]{Items: rows[:n], Next: rows[n-1].Name}
		}
		if page.Items == nil {
			page.Items = []api.NodeSummary{}
		}
		return page, nil
	})
}
