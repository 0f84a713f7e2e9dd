package policy

import "testing"

func TestNetworkAllowed(t *testing.T) {
	p := &Policy{Scopes: Scopes{Network: []string{"registry.internal:443", "docs.example.org", "*.pages.test:8080", "[::1]:9000"}}}
	for _, c := range []struct {
		target string
		want   bool
	}{
		{"registry.internal:443", true},
		{"REGISTRY.internal:443", true},
		{"registry.internal:80", false},
		{"docs.example.org:443", true},
		{"docs.example.org:8443", true},
		{"evil.docs.example.org:443", false},
		{"a.pages.test:8080", true},
		{"a.b.pages.test:8080", true},
		{"pages.test:8080", false},
		{"a.pages.test:80", false},
		{"[::1]:9000", true},
		{"[::1]:9001", false},
		{"127.0.0.1:443", false},
		{"no-port", false},
		{"host:notaport", false},
	} {
		got, why := p.NetworkAllowed(c.target)
		if got != c.want {
			t.Errorf("NetworkAllowed(%q) = %v (%s), want %v", c.target, got, why, c.want)
		}
		if !got && why == "" {
			t.Errorf("NetworkAllowed(%q) refused without a reason", c.target)
		}
	}
	empty := &Policy{}
	if ok, why := empty.NetworkAllowed("example.com:443"); ok || why == "" {
		t.Errorf("an empty scopes.network allowed a host (%v, %q)", ok, why)
	}
}
