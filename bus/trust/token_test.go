package trust_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/golang-jwt/jwt/v5"
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

// TestAPITokenLifetimeEnforced: a token made by hand with the operator's
// own key — as anyone holding an operator.creds file can — is refused when
// it would outlive MaxAPITokenTTL, lacks its issue or expiry time, or
// claims to be issued in the future; one of exactly MaxAPITokenTTL,
// issued earlier, is accepted until it expires.
func TestAPITokenLifetimeEnforced(t *testing.T) {
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	alice, err := trust.NewIdentity(root, "alice", trust.KindOperator, []string{"operator"}, 3*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	forge := func(iat, exp time.Time) string {
		c := jwt.MapClaims{"sub": "alice", "aud": trust.APITokenAudience, "cred": alice.Credential}
		if !iat.IsZero() {
			c["iat"] = iat.Unix()
		}
		if !exp.IsZero() {
			c["exp"] = exp.Unix()
		}
		s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(alice.Key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for name, tc := range map[string]struct {
		token string
		want  string
	}{
		"a day long":            {forge(now, now.Add(24*time.Hour)), "lifetime over"},
		"a second too long":     {forge(now.Add(-time.Minute), now.Add(trust.MaxAPITokenTTL-time.Minute+time.Second)), "lifetime over"},
		"no issue time":         {forge(time.Time{}, now.Add(time.Minute)), "lifetime over"},
		"no expiry":             {forge(now, time.Time{}), "exp claim is required"},
		"issued in the future":  {forge(now.Add(time.Hour), now.Add(90*time.Minute)), "used before issued"},
		"issued long ago, live": {forge(now.Add(-2*time.Hour), now.Add(time.Minute)), "lifetime over"},
	} {
		if _, err := trust.VerifyAPIToken(root, tc.token, now); !errors.Is(err, trust.ErrBadToken) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadToken saying %q", name, err, tc.want)
		}
	}
	full := forge(now.Add(-time.Minute), now.Add(trust.MaxAPITokenTTL-time.Minute))
	if _, err := trust.VerifyAPIToken(root, full, now); err != nil {
		t.Errorf("a token of exactly %s: %v", trust.MaxAPITokenTTL, err)
	}
	if _, err := trust.VerifyAPIToken(root, full, now.Add(trust.MaxAPITokenTTL)); !errors.Is(err, trust.ErrBadToken) {
		t.Errorf("the same token at its expiry: %v, want refused", err)
	}
}
