package trust_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
)

// TestAPIToken: a token made from an operator identity verifies against
// its root and names the operator; another root's operator, a node's
// credential, an expired or too long-lived token, a tampered one, and
// a token signed by a key other than the credential's are refused.
func TestAPIToken(t *testing.T) {
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	alice, err := trust.NewIdentity(root, "alice", trust.KindOperator, []string{"operator"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := trust.APIToken(alice, trust.DefaultAPITokenTTL, now)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := trust.VerifyAPIToken(root, tok, now)
	if err != nil || cred.ID != "alice" {
		t.Fatalf("VerifyAPIToken = %+v, %v", cred, err)
	}

	other, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := trust.NewIdentity(other, "alice", trust.KindOperator, []string{"operator"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	node, err := trust.NewIdentity(root, "exec-b", trust.KindNode, []string{"executor"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mint := func(id *trust.Identity) string {
		s, err := trust.APIToken(id, time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// alice's credential, signed with a key that is not hers.
	stolen := &trust.Identity{ID: "alice", Key: node.Key, Credential: alice.Credential}
	parts := strings.Split(tok, ".")
	flip := "A"
	if parts[2][0] == 'A' {
		flip = "B"
	}
	tampered := parts[0] + "." + parts[1] + "." + flip + parts[2][1:]
	for name, tc := range map[string]struct {
		token string
		at    time.Time
		want  string
	}{
		"another root":       {mint(mallory), now, "bad credential"},
		"a node credential":  {mint(node), now, "not an operator's"},
		"expired":            {tok, now.Add(trust.DefaultAPITokenTTL + time.Second), "expired"},
		"tampered":           {tampered, now, "signature"},
		"not the cred's key": {mint(stolen), now, "signature"},
		"not a token":        {"hello", now, "malformed"},
	} {
		_, err := trust.VerifyAPIToken(root, tc.token, tc.at)
		if !errors.Is(err, trust.ErrBadToken) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadToken saying %q", name, err, tc.want)
		}
	}
	if _, err := trust.APIToken(alice, 2*trust.MaxAPITokenTTL, now); err == nil {
		t.Error("APIToken made a token longer-lived than MaxAPITokenTTL")
	}
}
