package plugin

import (
	"errors"
	"fmt"
	"net"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrNetworkNotAllowed marks a plugin whose grants.network names a host
// the policy's scopes.network does not allow.
var ErrNetworkNotAllowed = errors.New("plugin: network grant not allowed by the policy")

// CheckNetwork judges m's grants.network with allowed — the policy's
// (*policy.Policy).NetworkAllowed, which takes "host:port" — and returns
// nil when every grant is allowed, or an error wrapping
// ErrNetworkNotAllowed that names the first grant refused, its place and
// the policy's reason. A grant without a port reaches every port of its
// host: it is asked as host:0, which only a scope pattern without a port
// (or with port "*") allows.
func CheckNetwork(m event.PluginManifest, allowed func(target string) (bool, string)) error {
	for i, g := range m.Grants.Network {
		target, label := g, fmt.Sprintf("grants.network[%d] %q", i, g)
		if _, _, err := net.SplitHostPort(g); err != nil {
			target, label = net.JoinHostPort(g, "0"), label+" (any port)"
		}
		if ok, why := allowed(target); !ok {
			return fmt.Errorf("%w: %s of plugin %s: %s", ErrNetworkNotAllowed, label, m.Name, why)
		}
	}
	return nil
}
