package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginAddJudgesNetworkGrants: under a policy whose scopes.network
// is empty (the shipped default), a manifest granting a host is refused
// with the grant's place and the policy's reason, and nothing is
// published; one granting none is added.
func TestPluginAddJudgesNetworkGrants(t *testing.T) {
	h, _ := nodeHarness(t)
	dir := t.TempDir()
	web := filepath.Join(dir, "web.yaml")
	if err := os.WriteFile(web, []byte("name: web\ncommand: [/nonexistent/web]\ngrants: {network: [\"api.example.com:443\"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.run("plugin", "add", "-f", web, "--timeout", "20s")
	if r.code == 0 || !strings.Contains(r.stderr, `grants.network[0] "api.example.com:443" of plugin web`) ||
		!strings.Contains(r.stderr, "scopes.network is empty") || !strings.Contains(r.stderr, "nothing was published") {
		t.Fatalf("a network grant the policy does not allow: %+v", r)
	}
	if r := h.run("plugin", "show", "web"); r.code == 0 {
		t.Fatalf("the refused plugin was published: %+v", r)
	}
	if err := os.WriteFile(web, []byte("name: web\ncommand: [/nonexistent/web]\ngrants: {network: []}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("plugin", "add", "-f", web, "--timeout", "20s"); r.code != 0 {
		t.Fatalf("no network grant: %+v", r)
	}
}
