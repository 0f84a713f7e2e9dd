package policy

import (
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
)

// NetworkAllowed reports whether a step may reach target under the
// policy's scopes.network, and why not when it may not. target is a
// "host:port" (a URL's host and port, the port filled in from the scheme).
// Each pattern is "host:port", "host" (any port) or "*.domain[:port]"
// (any subdomain, not the domain itself); host names compare without
// case, a pattern port "*" means any port. An empty list allows nothing:
// a policy that names no host reaches none.
func (p *Policy) NetworkAllowed(target string) (bool, string) {
	host, port, err := net.SplitHostPort(target)
	if err != nil || host == "" {
		return false, fmt.Sprintf("network target %q is not host:port", target)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return false, fmt.Sprintf("network target %q has no valid port", target)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if len(p.Scopes.Network) == 0 {
		return false, fmt.Sprintf("%s: the policy's scopes.network is empty, so no host may be reached", target)
	}
	for _, pat := range p.Scopes.Network {
		if networkMatch(strings.ToLower(strings.TrimSpace(pat)), host, port) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%s is not in the policy's scopes.network %v", net.JoinHostPort(host, port), p.Scopes.Network)
}

// networkMatch matches one scopes.network pattern against a host and port.
func networkMatch(pat, host, port string) bool {
	ph, pp := pat, "*"
	if h, p, err := net.SplitHostPort(pat); err == nil {
		ph, pp = h, p
	}
	ph = strings.TrimSuffix(ph, ".")
	if pp != "*" && pp != port {
		return false
	}
	if rest, ok := strings.CutPrefix(ph, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	if strings.ContainsAny(ph, "*?[") {
		ok, err := path.Match(ph, host)
		return err == nil && ok
	}
	return ph == host
}
