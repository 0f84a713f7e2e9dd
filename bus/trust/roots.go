package trust

import (
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Rotation of the root (docs/security.md, "Root rotation"). A cluster is
// named by its genesis root, the one it was created with: root.pub of
// every data dir holds it, and every ledger starts from it. A rotation
// adds a root (a trust.root_added event folded by the ledger) and later
// retires the old one (trust.root_retired). Beside the genesis, a
// directory may list in roots.pub the other roots it trusts locally:
//
//	roots.pub   PEM "PUBLIC KEY" blocks, each with the header
//	            Agentic-Root: genesis   the cluster's genesis root
//	            Agentic-Root: trusted   another root this holder trusts
//
// A root directory made by a rotation (agentctl keys rotate-root) holds
// the new root's root.key and root.pub and, in roots.pub, the genesis and
// the roots it rotates from; a data dir enrolled with it keeps the genesis
// as root.pub and lists the new root in roots.pub. What roots.pub lists is
// trusted by that holder alone (its own credential, the CLI, a node that
// keeps no ledger); a ledger trusts exactly the genesis and the roots its
// accepted trust events added, each from its stream position on.

// RootsFile is the file of a directory that lists the roots it trusts
// beside its own.
const RootsFile = "roots.pub"

const (
	rootHeader      = "Agentic-Root"
	rootGenesis     = "genesis"
	rootTrusted     = "trusted"
	publicKeyPEMTyp = "PUBLIC KEY"
)

// Keyring finds the public key of a root by its KeyID (the iss of the
// credentials it issues).
type Keyring interface {
	RootKey(keyID string) (ed25519.PublicKey, bool)
}

// PublicRoot is a verify-only root for the public key pub.
func PublicRoot(pub ed25519.PublicKey) *Root { return &Root{Public: pub} }

// Genesis is the public key of the cluster's genesis root: the one the
// root was rotated from, first of all (itself when it was not).
func (r *Root) Genesis() ed25519.PublicKey {
	if r.genesis != nil {
		return r.genesis
	}
	return r.Public
}

// GenesisID is the KeyID of the genesis root: the name of the cluster.
func (r *Root) GenesisID() string { return Fingerprint(r.Genesis()) }

// Trusted returns the public keys of every root whose credentials r
// verifies: its own, then the others it trusts (roots.pub).
func (r *Root) Trusted() []ed25519.PublicKey {
	out := []ed25519.PublicKey{r.Public}
	for _, k := range append([]ed25519.PublicKey{r.Genesis()}, r.also...) {
		if !slices.ContainsFunc(out, func(o ed25519.PublicKey) bool { return o.Equal(k) }) {
			out = append(out, k)
		}
	}
	return out
}

// RootKey is the public key of the root keyID among those r trusts.
func (r *Root) RootKey(keyID string) (ed25519.PublicKey, bool) {
	for _, k := range r.Trusted() {
		if Fingerprint(k) == keyID {
			return k, true
		}
	}
	return nil, false
}

// Only is the root r without the other roots it trusts: a verify-only
// root for its own public key.
func (r *Root) Only() *Root { return &Root{Public: r.Public} }

// WithTrusted returns r trusting the roots keys too, beside its own, with
// genesis as the cluster's genesis (nil: keep r's).
func (r *Root) WithTrusted(genesis ed25519.PublicKey, keys ...ed25519.PublicKey) *Root {
	n := *r
	if genesis != nil {
		n.genesis = genesis
	}
	n.also = slices.Clone(r.also)
	for _, k := range keys {
		if !k.Equal(n.Public) && !slices.ContainsFunc(n.also, func(o ed25519.PublicKey) bool { return o.Equal(k) }) {
			n.also = append(n.also, k)
		}
	}
	return &n
}

// saveRoots writes dir's roots.pub for r: its genesis (when not r's own
// key) and the other roots it trusts. Nothing is written when there are
// none.
func saveRoots(dir string, r *Root) error {
	var b strings.Builder
	add := func(k ed25519.PublicKey, kind string) error {
		der, err := encodePublic(k)
		if err != nil {
			return err
		}
		blk, _ := pem.Decode(der)
		blk.Headers = map[string]string{rootHeader: kind}
		b.Write(pem.EncodeToMemory(blk))
		return nil
	}
	if !r.Genesis().Equal(r.Public) {
		if err := add(r.Genesis(), rootGenesis); err != nil {
			return err
		}
	}
	for _, k := range r.also {
		if k.Equal(r.Public) || k.Equal(r.Genesis()) {
			continue
		}
		if err := add(k, rootTrusted); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, RootsFile)
	if b.Len() == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("trust: %w", err)
		}
		return nil
	}
	return WriteFile(path, []byte("# roots trusted beside root.pub (docs/security.md, \"Root rotation\")\n"+b.String()))
}

// loadRoots reads dir's roots.pub into r (nothing when it is absent).
func loadRoots(dir string, r *Root) error {
	path := filepath.Join(dir, RootsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("trust: read %s: %w", path, err)
	}
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != publicKeyPEMTyp {
			return fmt.Errorf("trust: %s: a %s block, want %s", path, blk.Type, publicKeyPEMTyp)
		}
		k, err := decodePublic(blk)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		switch blk.Headers[rootHeader] {
		case rootGenesis:
			if r.genesis != nil && !r.genesis.Equal(k) {
				return fmt.Errorf("trust: %s names two genesis roots", path)
			}
			r.genesis = k
			r.also = append(r.also, k)
		case rootTrusted:
			r.also = append(r.also, k)
		default:
			return fmt.Errorf("trust: %s: a key whose %s header is %q, want %s or %s", path, rootHeader, blk.Headers[rootHeader], rootGenesis, rootTrusted)
		}
	}
	return nil
}
