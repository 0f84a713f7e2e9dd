package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/agentic-dev/agentic/roles/policy"
)

// checkPluginNetwork judges m's grants.network against the scopes.network
// of the policy in force (the shipped default while the ledger holds
// none), and refuses, with the grant that is not allowed, a plugin that
// would reach a host the policy does not allow.
func checkPluginNetwork(ctx context.Context, c *api.Client, m event.PluginManifest) error {
	if len(m.Grants.Network) == 0 {
		return nil
	}
	text, version := policy.DefaultYAML(), "the shipped default"
	switch in, err := policyShow(ctx, c, 0); {
	case err == nil:
		text, version = []byte(in.Text), fmt.Sprintf("version %d", in.Version)
	case !errors.Is(err, api.ErrNotFound):
		return fmt.Errorf("plugin %s: read the policy in force to judge its grants.network: %w", m.Name, err)
	}
	p, err := policy.Parse(text, "policy in force")
	if err != nil {
		return fmt.Errorf("plugin %s: the policy in force does not parse: %w", m.Name, err)
	}
	if err := plugin.CheckNetwork(m, p.NetworkAllowed); err != nil {
		return api.WithHint(fmt.Errorf("%w (policy %s)\n(nothing was published)", err, version),
			"narrow the plugin's grants.network, or add the host to the policy's scopes.network (agentctl policy apply)")
	}
	return nil
}
