package trust

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// API tokens: what an operator presents to a node's HTTP API when it is
// served on an address that is not loopback. A token is a short-lived JWT
// signed with the operator's own key (the one in its creds file) that
// carries the operator's credential; a node verifies the credential with
// the cluster root, then the token's signature with the key the credential
// names. Nothing is stored on the node, and the root key is not needed to
// make one: whoever holds an operator.creds file the root signed can.
const (
	// APITokenAudience is the aud claim of an API token.
	APITokenAudience = "agentic-api"
	// MaxAPITokenTTL bounds an API token's lifetime: a leaked token is
	// worth little for long.
	MaxAPITokenTTL = time.Hour
	// DefaultAPITokenTTL is the lifetime agentctl gives a token.
	DefaultAPITokenTTL = 15 * time.Minute
)

// ErrBadToken marks an API token that is malformed, expired, forged, too
// long-lived, or carries a credential the root did not sign or that is not
// an operator's.
var ErrBadToken = errors.New("trust: bad API token")

// apiTokenClaims are the claims of an API token.
type apiTokenClaims struct {
	jwt.RegisteredClaims
	// Credential is the signer's credential JWT (signed by the root).
	Credential string `json:"cred"`
}

// APIToken makes an API token for id, valid for ttl (at most
// MaxAPITokenTTL).
func APIToken(id *Identity, ttl time.Duration, now time.Time) (string, error) {
	if ttl <= 0 || ttl > MaxAPITokenTTL {
		return "", fmt.Errorf("trust: API token lifetime %s: want more than 0 and at most %s", ttl, MaxAPITokenTTL)
	}
	c := apiTokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   id.ID,
			Audience:  jwt.ClaimStrings{APITokenAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Credential: id.Credential,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(id.Key)
	if err != nil {
		return "", fmt.Errorf("trust: sign API token for %s: %w", id.ID, err)
	}
	return s, nil
}

// VerifyAPIToken checks an API token against root at time now and returns
// the operator credential it carries: signed by the credential's key, for
// APITokenAudience, issued (iat) no later than now and expiring (exp) after
// now and at most MaxAPITokenTTL after its issue. Errors match
// ErrBadToken. It cannot tell whether the credential was revoked — that
// is ledger state: a node checks it too, on every request
// (ledger.Store.CheckCredential).
func VerifyAPIToken(root *Root, token string, now time.Time) (*Credential, error) {
	var cred *Credential
	var c apiTokenClaims
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		claims, ok := t.Claims.(*apiTokenClaims)
		if !ok || claims.Credential == "" {
			return nil, errors.New("no credential in the token")
		}
		var err error
		if cred, err = root.Verify(claims.Credential, now); err != nil {
			return nil, err
		}
		if cred.Kind != KindOperator {
			return nil, fmt.Errorf("credential of %s is a %s's, not an operator's", cred.ID, cred.Kind)
		}
		return cred.PublicKey, nil
	},
		jwt.WithValidMethods([]string{"EdDSA"}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(APITokenAudience),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if c.Subject != cred.ID {
		return nil, fmt.Errorf("%w: subject %q is not the credential's %q", ErrBadToken, c.Subject, cred.ID)
	}
	if c.IssuedAt == nil || c.ExpiresAt.Sub(c.IssuedAt.Time) > MaxAPITokenTTL {
		return nil, fmt.Errorf("%w: lifetime over %s", ErrBadToken, MaxAPITokenTTL)
	}
	return cred, nil
}
