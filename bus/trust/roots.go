package trust

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"maps"
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
//	            Agentic-Root: genesis          the cluster's genesis root
//	            Agentic-Root: genesis-retired  the same, no longer trusted
//	            Agentic-Root: trusted          another root this holder trusts
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
	rootRetired     = "genesis-retired"
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
// verifies: its own, then the genesis (unless retired) and the others it
// trusts (roots.pub).
func (r *Root) Trusted() []ed25519.PublicKey {
	out := []ed25519.PublicKey{r.Public}
	others := r.also
	if !r.genesisRetired {
		others = append([]ed25519.PublicKey{r.Genesis()}, others...)
	}
	for _, k := range others {
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

// WithoutRoot returns r no longer trusting the root keyID: dropped from
// the roots it trusts, or marked retired when it is the genesis. A root
// never forgets its own key.
func (r *Root) WithoutRoot(keyID string) *Root {
	n := *r
	n.also = slices.DeleteFunc(slices.Clone(r.also), func(k ed25519.PublicKey) bool { return Fingerprint(k) == keyID })
	if r.GenesisID() == keyID {
		if n.genesis == nil {
			n.genesis = r.Public
		}
		n.genesisRetired = true
	}
	return &n
}

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

// encodeRoots is the PEM blocks of the roots r trusts beside its own key:
// its genesis (when not r's own key) and the others (roots.pub).
func encodeRoots(r *Root) (string, error) {
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
	switch {
	case r.genesisRetired:
		if err := add(r.Genesis(), rootRetired); err != nil {
			return "", err
		}
	case !r.Genesis().Equal(r.Public):
		if err := add(r.Genesis(), rootGenesis); err != nil {
			return "", err
		}
	}
	for _, k := range r.also {
		if k.Equal(r.Public) || k.Equal(r.Genesis()) {
			continue
		}
		if err := add(k, rootTrusted); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// saveRoots writes dir's roots.pub for r (encodeRoots), or removes it
// when r trusts no other root.
func saveRoots(dir string, r *Root) error {
	blocks, err := encodeRoots(r)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, RootsFile)
	if blocks == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("trust: %w", err)
		}
		return nil
	}
	return WriteFile(path, []byte("# roots trusted beside root.pub (docs/security.md, \"Root rotation\")\n"+blocks))
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
		if err := r.addRootBlock(blk); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// addRootBlock takes in a PUBLIC KEY block with an Agentic-Root header.
func (r *Root) addRootBlock(blk *pem.Block) error {
	k, err := decodePublic(blk)
	if err != nil {
		return err
	}
	switch blk.Headers[rootHeader] {
	case rootGenesis:
		if r.genesis != nil && !r.genesis.Equal(k) {
			return errors.New("trust: two genesis roots")
		}
		r.genesis = k
		r.also = append(r.also, k)
	case rootRetired:
		r.genesis, r.genesisRetired = k, true
	case rootTrusted:
		r.also = append(r.also, k)
	default:
		return fmt.Errorf("trust: a key whose %s header is %q, want %s, %s or %s", rootHeader, blk.Headers[rootHeader], rootGenesis, rootRetired, rootTrusted)
	}
	return nil
}

// InheritedFile holds, in a rotated root's directory, the seeds it
// inherited from the root it was rotated from (Root.Inherit): secret,
// like root.key.
const InheritedFile = "inherited.keys"

const inheritedBlock = "AGENTIC DERIVED SEED"

// Inherit makes r derive, for each of purposes, the seed from derives
// (its own, or one it inherited), instead of its own: how a rotated root
// keeps the keys of the cluster's other systems that must outlive the
// rotation — the NATS operator and accounts, whose account owns the
// JetStream streams (bus/natsauth) — while issuing credentials with its
// own key. from must hold its private key.
func (r *Root) Inherit(from *Root, purposes ...string) error {
	if r.inherited == nil {
		r.inherited = map[string][]byte{}
	}
	for _, p := range purposes {
		seed, err := from.DeriveSeed(p)
		if err != nil {
			return err
		}
		r.inherited[p] = seed
	}
	return nil
}

// Inherits reports whether r derives purpose's seed as the root it was
// rotated from did (Inherit).
func (r *Root) Inherits(purpose string) bool {
	_, ok := r.inherited[purpose]
	return ok
}

// saveInherited writes dir's inherited.keys when r inherited seeds.
func saveInherited(dir string, r *Root) error {
	if len(r.inherited) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("# seeds inherited from the root this one was rotated from: keep this file secret, with root.key\n")
	for _, p := range slices.Sorted(maps.Keys(r.inherited)) {
		b.Write(pem.EncodeToMemory(&pem.Block{Type: inheritedBlock, Headers: map[string]string{"Purpose": p}, Bytes: r.inherited[p]}))
	}
	return WriteFile(filepath.Join(dir, InheritedFile), []byte(b.String()))
}

// loadInherited reads dir's inherited.keys into r (nothing when absent).
func loadInherited(dir string, r *Root) error {
	path := filepath.Join(dir, InheritedFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("trust: read %s: %w", path, err)
	}
	r.inherited = map[string][]byte{}
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != inheritedBlock || blk.Headers["Purpose"] == "" || len(blk.Bytes) != 32 {
			return fmt.Errorf("trust: %s: a block that is not an inherited seed", path)
		}
		r.inherited[blk.Headers["Purpose"]] = blk.Bytes
	}
	return nil
}

// Rotate makes a new root to succeed old (which must hold its private
// key): it issues credentials with a key of its own, trusts the genesis
// and every root old trusts (for the overlap), and inherits from old the
// seeds of purposes (Inherit). Save it with SaveRoot in a directory of
// its own.
func Rotate(old *Root, purposes ...string) (*Root, error) {
	if !old.CanIssue() {
		return nil, errors.New("trust: rotate: the old root's private key is needed (root.key)")
	}
	n, err := NewRoot()
	if err != nil {
		return nil, err
	}
	if err := n.Inherit(old, purposes...); err != nil {
		return nil, err
	}
	r := n.WithTrusted(old.Genesis(), old.Trusted()...)
	r.genesisRetired = old.genesisRetired
	return r, nil
}

// rootProofMessage is what a root signs to agree to be a root of the
// cluster whose genesis is genesisID.
func rootProofMessage(keyID, genesisID string) []byte {
	return []byte("agentic trust.root_added v1\n" + keyID + "\n" + genesisID)
}

// RootProof is r's signature, hex, agreeing to be a root of the cluster
// whose genesis root is genesisID: the proof a trust.root_added carries.
func (r *Root) RootProof(genesisID string) (string, error) {
	if !r.CanIssue() {
		return "", errors.New("trust: a root proof needs the root's private key (root.key)")
	}
	return hex.EncodeToString(ed25519.Sign(r.private, rootProofMessage(r.KeyID(), genesisID))), nil
}

// VerifyRootProof reports whether proof is pub's RootProof for the
// cluster whose genesis root is genesisID.
func VerifyRootProof(pub ed25519.PublicKey, genesisID, proof string) bool {
	sig, err := hex.DecodeString(proof)
	return err == nil && len(sig) == ed25519.SignatureSize && len(pub) == ed25519.PublicKeySize &&
		ed25519.Verify(pub, rootProofMessage(Fingerprint(pub), genesisID), sig)
}
