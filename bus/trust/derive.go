package trust

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
)

// DeriveSeed derives a 32-byte seed for purpose from the root private key
// (HKDF-SHA256 over the key's seed, purpose as the info): how keys that
// answer to the root in another system (the NATS operator and accounts,
// bus/natsauth) are made from it, deterministically and without a second
// secret to keep. Distinct purposes give unrelated seeds, and a seed does
// not reveal the root key. It needs the root private key.
func (r *Root) DeriveSeed(purpose string) ([]byte, error) {
	if !r.CanIssue() {
		return nil, errors.New("trust: root private key not available; derive keys where root.key is")
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
