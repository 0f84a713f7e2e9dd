package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/executor"
	"github.com/agentic-dev/agentic/roles/planner/llm"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/agentic-dev/agentic/roles/policy"
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
	}, Policy: func(ctx context.Context) (*policy.Policy, error) {
		return policyInForce(ctx, c)
	}}
}

// policyInForce is the policy in force (policy.show), or the shipped
// default while the ledger holds none.
func policyInForce(ctx context.Context, c *api.Client) (*policy.Policy, error) {
	text := policy.DefaultYAML()
	var in api.PolicyVersion
	switch err := c.Call(ctx, api.MethodPolicyShow, api.PolicyRequest{}, &in); {
	case err == nil:
		text = []byte(in.Text)
	case !errors.Is(err, api.ErrNotFound):
		return nil, fmt.Errorf("policy in force: %w", err)
	}
	p, err := policy.Parse(text, "policy in force")
	if err != nil {
		return nil, fmt.Errorf("policy in force: %w", err)
	}
	return p, nil
}

// promptTools are the approved plugin tools a plan's prompt lists: the
// pinned definitions of the plugins in force (plugins.show for each),
// tools whose servers report a changed definition left out.
func promptTools(ctx context.Context, c *api.Client) ([]llm.ToolInfo, error) {
	var vs []plugin.View
	if err := c.Call(ctx, api.MethodPluginsList, struct{}{}, &vs); err != nil {
		return nil, err
	}
	var out []llm.ToolInfo
	for _, brief := range vs {
		var v plugin.View
		if err := c.Call(ctx, api.MethodPluginsShow, api.PluginRequest{Name: brief.Name}, &v); err != nil {
			return out, err
		}
		for _, t := range v.Tools {
			if t.Status != plugin.ToolApproved || t.Pin == nil {
				continue
			}
			out = append(out, llm.ToolInfo{Name: t.Name, Description: t.Pin.Definition.Description, InputSchema: t.Pin.Definition.InputSchema})
		}
	}
	return out, nil
}

// dashboardPlugin is plugins.show for the dashboard's gate inbox (a tool
// step's definition).
func (n *Node) dashboardPlugin(ctx context.Context, name string) (plugin.View, error) {
	return guard(n, n.plugins.Show)(ctx, api.PluginRequest{Name: name})
}
