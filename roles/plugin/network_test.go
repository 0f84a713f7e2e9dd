package plugin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/agentic-dev/agentic/roles/policy"
)

// TestCheckNetwork: a plugin's grants.network is judged against the
// policy's scopes.network (policy.NetworkAllowed): an empty scope allows
// no host; a grant without a port needs every port of its host; a
// refusal names the grant, its place and the scope.
func TestCheckNetwork(t *testing.T) {
	parse := func(text string) *policy.Policy {
		p, err := policy.Parse([]byte(text), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	none := parse("name: none\n")
	some := parse("name: some\nscopes:\n  network: [\"api.example.com:443\", \"*.internal\"]\n")
	m := event.PluginManifest{Name: "web", Command: []string{"/bin/web"}}
	if err := plugin.CheckNetwork(m, none.NetworkAllowed); err != nil {
		t.Errorf("no network grant: %v", err)
	}
	for _, c := range []struct {
		p     *policy.Policy
		grant []string
		want  string // "" allowed
	}{
		{none, []string{"api.example.com:443"}, `grants.network[0] "api.example.com:443" of plugin web: api.example.com:443: the policy's scopes.network is empty`},
		{some, []string{"api.example.com:443"}, ""},
		{some, []string{"db.internal"}, ""},
		{some, []string{"api.example.com:443", "api.example.com"}, `grants.network[1] "api.example.com" (any port) of plugin web`},
		{some, []string{"evil.example.net:443"}, `grants.network[0] "evil.example.net:443" of plugin web: evil.example.net:443 is not in the policy's scopes.network`},
	} {
		m.Grants.Network = c.grant
		err := plugin.CheckNetwork(m, c.p.NetworkAllowed)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v under %s: %v", c.grant, c.p.Name, err)
		case c.want != "" && (!errors.Is(err, plugin.ErrNetworkNotAllowed) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v under %s: %v, want %q", c.grant, c.p.Name, err, c.want)
		}
	}
}
