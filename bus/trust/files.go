package trust

import (
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside a data directory.
const (
	RootKeyFile       = "root.key"
	RootPubFile       = "root.pub"
	NodeKeyFile       = "node.key"
	NodeCredFile      = "node.cred"
	OperatorCredsFile = "operator.creds"
)

// Default lifetimes of issued credentials.
const (
	NodeCredentialTTL     = 365 * 24 * time.Hour
	OperatorCredentialTTL = 365 * 24 * time.Hour
)

const credBlock = "AGENTIC CREDENTIAL"

// SaveRoot writes root.key (if the root holds its private key) and root.pub.
func SaveRoot(dir string, r *Root) error {
	if r.CanIssue() {
		b, err := encodePrivate(r.private)
		if err != nil {
			return err
		}
		if err := WriteFile(filepath.Join(dir, RootKeyFile), b); err != nil {
			return err
		}
		if err := saveInherited(dir, r); err != nil {
			return err
		}
	}
	b, err := encodePublic(r.Public)
	if err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, RootPubFile), b); err != nil {
		return err
	}
	return saveRoots(dir, r)
}

// LoadRoot reads the root from dir: root.key if present (issuing root),
// otherwise root.pub (verify-only root), trusting the roots roots.pub
// lists beside it.
func LoadRoot(dir string) (*Root, error) {
	r, err := loadRoot(dir)
	if err != nil {
		return nil, err
	}
	if err := loadRoots(dir, r); err != nil {
		return nil, err
	}
	if r.CanIssue() {
		if err := loadInherited(dir, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func loadRoot(dir string) (*Root, error) {
	if b, err := os.ReadFile(filepath.Join(dir, RootKeyFile)); err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("trust: %s: no PEM block", filepath.Join(dir, RootKeyFile))
		}
		k, err := decodePrivate(blk)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RootKeyFile), err)
		}
		return &Root{Public: k.Public().(ed25519.PublicKey), private: k}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("trust: read root key: %w", err)
	}
	return LoadRootPublic(filepath.Join(dir, RootPubFile))
}

// LoadRootPublic reads a root public key PEM file.
func LoadRootPublic(path string) (*Root, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trust: read root public key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("trust: %s: no PEM block", path)
	}
	pub, err := decodePublic(blk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Root{Public: pub}, nil
}

// SaveIdentity writes node.key and node.cred.
func SaveIdentity(dir string, id *Identity) error {
	b, err := encodePrivate(id.Key)
	if err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, NodeKeyFile), b); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, NodeCredFile), []byte(id.Credential+"\n"))
}

// LoadIdentity reads node.key and node.cred and checks the credential against
// root and the key.
func LoadIdentity(dir string, root *Root) (*Identity, error) {
	kb, err := os.ReadFile(filepath.Join(dir, NodeKeyFile))
	if err != nil {
		return nil, fmt.Errorf("trust: read node key: %w", err)
	}
	blk, _ := pem.Decode(kb)
	if blk == nil {
		return nil, fmt.Errorf("trust: %s: no PEM block", filepath.Join(dir, NodeKeyFile))
	}
	key, err := decodePrivate(blk)
	if err != nil {
		return nil, err
	}
	raw, err := readCred(dir)
	if err != nil {
		return nil, err
	}
	return identityFrom(root, key, raw)
}

// readCred reads dir's node.cred.
func readCred(dir string) (string, error) {
	cb, err := os.ReadFile(filepath.Join(dir, NodeCredFile))
	if err != nil {
		return "", fmt.Errorf("trust: read node credential: %w", err)
	}
	return strings.TrimSpace(string(cb)), nil
}

func identityFrom(root *Root, key ed25519.PrivateKey, raw string) (*Identity, error) {
	cred, err := root.Verify(raw, time.Now())
	if err != nil {
		return nil, err
	}
	if !cred.PublicKey.Equal(key.Public()) {
		return nil, fmt.Errorf("%w: credential for %s is for another key", ErrBadCredential, cred.ID)
	}
	return &Identity{ID: cred.ID, Key: key, Credential: raw, Roles: cred.Roles}, nil
}

// WriteCreds writes a creds file (credential, private key, root public key)
// for agentctl.
func WriteCreds(path string, id *Identity, root *Root) error {
	kb, err := encodePrivate(id.Key)
	if err != nil {
		return err
	}
	// The cluster's genesis root names the cluster; a rotated root that
	// issued the credential follows as a root it trusts.
	pb, err := encodePublic(root.Genesis())
	if err != nil {
		return err
	}
	roots, err := encodeRoots(dataDirRoot(nil, root))
	if err != nil {
		return err
	}
	pb = append(pb, roots...)
	var b strings.Builder
	b.WriteString("# agentic credentials for " + id.ID + ": keep this file secret.\n")
	b.Write(pem.EncodeToMemory(&pem.Block{Type: credBlock, Bytes: []byte(id.Credential)}))
	b.Write(kb)
	b.Write(pb)
	return WriteFile(path, []byte(b.String()))
}

// ReadCreds reads a creds file written by WriteCreds and verifies it.
func ReadCreds(path string) (*Identity, *Root, error) {
	c, err := ReadCredsFile(path)
	if err != nil {
		return nil, nil, err
	}
	id, err := c.Identity()
	if err != nil {
		return nil, nil, err
	}
	return id, c.Root(), nil
}

// ReadCredsRoot reads the root public key of a creds file without judging
// its credential (which may have expired): the root whose cluster the
// file belongs to. An absent file gives an error wrapping fs.ErrNotExist.
func ReadCredsRoot(path string) (*Root, error) {
	c, err := ReadCredsFile(path)
	if err != nil {
		return nil, err
	}
	return c.Root(), nil
}

// Creds is a creds file read and parsed once (ReadCredsFile): a CLI that
// needs its identity, its root and its raw bytes (the NATS user,
// natsauth.CredsOptionsFrom) reads and parses the file one time.
type Creds struct {
	// Path is where the file was read; Raw its bytes.
	Path string
	Raw  []byte
	cred string
	key  ed25519.PrivateKey
	root *Root
}

// ReadCredsFile reads and parses the creds file at path, without judging
// its credential (Identity does). An absent file gives an error wrapping
// fs.ErrNotExist.
func ReadCredsFile(path string) (*Creds, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trust: read creds: %w", err)
	}
	return ParseCredsFile(path, b)
}

// ParseCredsFile parses a creds file read from path as b (ReadCredsFile).
func ParseCredsFile(path string, b []byte) (*Creds, error) {
	cred, key, root, err := parseCreds(path, b)
	if err != nil {
		return nil, err
	}
	return &Creds{Path: path, Raw: b, cred: cred, key: key, root: root}, nil
}

// Root is the root public key of the file: the root whose cluster it
// belongs to (ReadCredsRoot).
func (c *Creds) Root() *Root { return c.root }

// Identity verifies the file's credential against its root now and
// returns the identity it presents (ReadCreds).
func (c *Creds) Identity() (*Identity, error) {
	id, err := identityFrom(c.root, c.key, c.cred)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	return id, nil
}

// parseCreds splits a creds file, read from path as b, into its
// credential, private key and root.
func parseCreds(path string, b []byte) (string, ed25519.PrivateKey, *Root, error) {
	var (
		cred string
		key  ed25519.PrivateKey
		root *Root
		err  error
	)
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		switch blk.Type {
		case credBlock:
			cred = string(blk.Bytes)
		case "PRIVATE KEY":
			if key, err = decodePrivate(blk); err != nil {
				return "", nil, nil, fmt.Errorf("%s: %w", path, err)
			}
		case "PUBLIC KEY":
			if _, extra := blk.Headers[rootHeader]; extra && root != nil {
				if err := root.addRootBlock(blk); err != nil {
					return "", nil, nil, fmt.Errorf("%s: %w", path, err)
				}
				continue
			}
			pub, err := decodePublic(blk)
			if err != nil {
				return "", nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			root = &Root{Public: pub}
		}
	}
	if cred == "" || key == nil || root == nil {
		return "", nil, nil, fmt.Errorf("trust: %s: not a creds file (want credential, private key and root public key)", path)
	}
	return cred, key, root, nil
}

// Bootstrap prepares the trust files of a data directory on first start and
// loads them on later starts. With no root.key and no root.pub present it
// creates a root, the node's identity with roles, and operator.creds. It
// returns the root (verify-only if root.key is absent) and the node identity.
func Bootstrap(dir, nodeID string, roles []string) (*Root, *Identity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("trust: data dir: %w", err)
	}
	root, err := LoadRoot(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if root, err = NewRoot(); err != nil {
			return nil, nil, err
		}
		if err := SaveRoot(dir, root); err != nil {
			return nil, nil, err
		}
		op, err := NewIdentity(root, DefaultOperator, KindOperator, DefaultOperatorRoles, OperatorCredentialTTL)
		if err != nil {
			return nil, nil, err
		}
		if err := WriteCreds(filepath.Join(dir, OperatorCredsFile), op, root); err != nil {
			return nil, nil, err
		}
	case err != nil:
		return nil, nil, err
	}
	id, err := LoadIdentity(dir, root)
	if err == nil && id.ID == nodeID && sameRoles(id.Roles, roles) {
		return root, id, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrBadCredential) {
		return nil, nil, err
	}
	// No identity yet, an expired one, or the node's name or roles changed:
	// issue a new credential if this directory holds the root key.
	if !root.CanIssue() {
		if err != nil {
			return nil, nil, fmt.Errorf("trust: node has no valid credential and %s is absent: enroll it with 'agentctl node enroll': %w", RootKeyFile, err)
		}
		return nil, nil, fmt.Errorf("trust: node credential is for %s %v, want %s %v, and %s is absent: enroll it again", id.ID, id.Roles, nodeID, roles, RootKeyFile)
	}
	id, err = NewIdentity(root, nodeID, KindNode, roles, NodeCredentialTTL)
	if err != nil {
		return nil, nil, err
	}
	if err := SaveIdentity(dir, id); err != nil {
		return nil, nil, err
	}
	return root, id, nil
}

func sameRoles(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, r := range a {
		if !contains(b, r) {
			return false
		}
	}
	return true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// writeFile writes b to path with mode 0600, durably (temp file, fsync,
// rename).
func WriteFile(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("trust: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("trust: close %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("trust: rename %s: %w", path, err)
	}
	return nil
}
