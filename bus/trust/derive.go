package trust

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nkeys"
)

// DeriveSeed derives a 32-byte seed for purpose from the root private key
// (HKDF-SHA256 over the key's seed, purpose as the info): how keys that
// answer to the root in another system (the NATS operator and accounts,
// bus/natsauth) are made from it, deterministically and without a second
// secret to keep. Distinct purposes give unrelated seeds, and a seed does
// not reveal the root key. It needs the root private key.
//
// A rotated root derives the seeds it inherited (Inherit) as the root it
// was rotated from did.
func (r *Root) DeriveSeed(purpose string) ([]byte, error) {
	if !r.CanIssue() {
		return nil, errors.New("trust: root private key not available; derive keys where root.key is")
	}
	if s, ok := r.inherited[purpose]; ok {
		return slices.Clone(s), nil
	}
	return deriveSeed(r.private.Seed(), purpose)
}

// DeriveSeed derives a 32-byte seed for purpose from the identity's
// private key, as Root.DeriveSeed does from the root's: the identity's key
// in another system (its NATS user nkey) without a second secret.
func (id *Identity) DeriveSeed(purpose string) ([]byte, error) {
	if len(id.Key) == 0 {
		return nil, fmt.Errorf("trust: identity %s has no private key", id.ID)
	}
	return deriveSeed(id.Key.Seed(), purpose)
}

func deriveSeed(secret []byte, purpose string) ([]byte, error) {
	if purpose == "" {
		return nil, errors.New("trust: derive a seed: empty purpose")
	}
	k, err := hkdf.Key(sha256.New, secret, []byte("agentic derived key"), purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("trust: derive a seed for %s: %w", purpose, err)
	}
	return k, nil
}

// NATSUserPurpose is the purpose of the seed of an identity's NATS user
// key (DeriveSeed): part of the protocol, as bus/natsauth's purposes are.
const NATSUserPurpose = "agentic/nats/user/v1"

// NATSUserKey is the public NATS user key (U…) of the identity whose
// private key is priv: the key its NATS user JWT is issued for
// (bus/natsauth.UserKey derives the same pair), named in its credential.
func NATSUserKey(priv ed25519.PrivateKey) (string, error) {
	seed, err := deriveSeed(priv.Seed(), NATSUserPurpose)
	if err != nil {
		return "", err
	}
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, seed)
	if err != nil {
		return "", fmt.Errorf("trust: NATS user key: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("trust: NATS user key: %w", err)
	}
	return pub, nil
}

// issued is when a credential was issued (zero if it does not say).
func issued(c CredentialClaims) time.Time {
	if c.IssuedAt == nil {
		return time.Time{}
	}
	return c.IssuedAt.Time
}
