package redact

import (
	"regexp"
	"testing"
)

// TestEveryPatternCompiles compiles every rule's pattern of every set and
// the package's other patterns, as package initialisation did before they
// were compiled on first use, and checks each is its source text.
func TestEveryPatternCompiles(t *testing.T) {
	n := 0
	for s := Set1; s <= Latest; s++ {
		for _, r := range s.rules() {
			if r.re == nil {
				continue
			}
			if _, err := regexp.Compile(r.re.String()); err != nil {
				t.Errorf("set %d rule %s: %v", s, r.name, err)
				continue
			}
			if got := r.re.re().String(); got != r.re.String() {
				t.Errorf("set %d rule %s compiles to %q, its source is %q", s, r.name, got, r.re.String())
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no rule has a pattern")
	}
	for _, p := range []*lazyRegexp{secretName, keyEnd, base64Ln, pemHeader, varRef, label, negated, codeCall, codeField, codeName, hexOrUUID} {
		if got := p.re().String(); got != p.String() {
			t.Errorf("%s compiles to %q", p, got)
		}
	}
}
