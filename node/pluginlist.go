package node

import (
	"context"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/executor"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// executorPlugins is where the node's executor learns the plugins in
// force: plugins.list of the query API, answered by a ledger node.
func (n *Node) executorPlugins() executor.Plugins {
	c := n.apiClient(0)
	return executor.Plugins{List: func(ctx context.Context) ([]plugin.View, error) {
		var vs []plugin.View
		if err := c.Call(ctx, api.MethodPluginsList, struct{}{}, &vs); err != nil {
			return nil, err
		}
		return vs, nil
	}}
}
