package trust

import (
	"fmt"
	"path/filepath"
	"time"
)

// Inspect verifies that root issued raw and reads it, whether it has
// expired or not: what a renewal starts from, and what a node reads its
// own credential's lifetime with.
func (r *Root) Inspect(raw string) (*Credential, error) {
	return r.VerifyWithin(raw, time.Now(), 100*365*24*time.Hour)
}

// Reissue issues a new credential with the subject, kind, key, roles and
// NATS user of raw — a credential root issued, expired or not — valid for
// ttl from now: a renewal. It needs only the public credential, so the
// root holder renews a node without its private key.
func (r *Root) Reissue(raw string, ttl time.Duration) (string, *Credential, error) {
	if ttl <= 0 {
		return "", nil, fmt.Errorf("trust: renew: ttl must be positive, got %s", ttl)
	}
	// An expired credential is renewed, a forged one is not.
	old, err := r.Inspect(raw)
	if err != nil {
		return "", nil, fmt.Errorf("trust: renew: %w", err)
	}
	s, err := r.issue(old.ID, old.Kind, old.PublicKey, old.NATSUser, old.Roles, ttl)
	if err != nil {
		return "", nil, err
	}
	c, err := r.Verify(s, time.Now())
	if err != nil {
		return "", nil, err
	}
	return s, c, nil
}

// RenewNode renews the node credential in dir (node.cred, which root
// issued, or a root it trusts) for ttl, keeping its key, and writes it
// back; renewed by a root of a rotation, the credential moves to it, and
// the dir's roots.pub lists it. It returns the new credential.
func RenewNode(dir string, root *Root, ttl time.Duration) (*Credential, error) {
	raw, err := readCred(dir)
	if err != nil {
		return nil, err
	}
	s, c, err := root.Reissue(raw, ttl)
	if err != nil {
		return nil, err
	}
	if c.Kind != KindNode {
		return nil, fmt.Errorf("trust: renew: %s holds a %s credential, not a node's", filepath.Join(dir, NodeCredFile), c.Kind)
	}
	// A root the data dir does not trust yet (a rotation: the node
	// renewed by the new root) joins its roots.pub first, so that the
	// node loads the new credential.
	have, err := sameRoot(dir, root)
	if err != nil {
		return nil, err
	}
	if have != nil {
		if _, ok := have.RootKey(root.KeyID()); !ok {
			if err := saveRoots(dir, dataDirRoot(have, root)); err != nil {
				return nil, err
			}
		}
	}
	if err := WriteFile(filepath.Join(dir, NodeCredFile), []byte(s+"\n")); err != nil {
		return nil, err
	}
	return c, nil
}

// RenewDue reports whether a credential valid from issued to expires
// should be renewed at now: within a third of its lifetime of expiry, or
// within RenewBefore, whichever comes later.
func RenewDue(issued, expires, now time.Time) bool {
	left := expires.Sub(now)
	window := min(expires.Sub(issued)/3, RenewBefore)
	return left <= window
}

// RenewBefore is how long before its expiry a credential is renewed at
// most (RenewDue).
const RenewBefore = 30 * 24 * time.Hour
