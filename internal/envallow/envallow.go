// Package envallow is the grammar of an environment allowlist — exact
// variable names, or prefixes ending in * — shared by the configuration
// that checks one and the runner that applies it.
package envallow

import (
	"fmt"
	"strings"
)

// Allowed reports whether the variable name is on the allowlist allow
// (exact names, or prefixes ending in *).
func Allowed(allow []string, name string) bool {
	for _, a := range allow {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if a == name {
			return true
		}
	}
	return false
}

// Check reports the first entry of an allowlist that is not a variable
// name, or a name followed by one *.
func Check(allow []string) error {
	for _, a := range allow {
		name := strings.TrimSuffix(a, "*")
		if name == "" && a != "*" || strings.ContainsAny(name, "=*\x00 \t") {
			return fmt.Errorf("env allowlist: %q is not a variable name (a trailing * matches a prefix)", a)
		}
	}
	return nil
}
