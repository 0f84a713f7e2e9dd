package trust

import (
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrExists marks a key or credential file that is already there: the
// functions that create them never overwrite one unless told to.
var ErrExists = errors.New("trust: file exists")

// Roles of operator credentials. OperatorRole equals event.RoleOperator
// (this package does not import the event types): it signs operator
// events. AdminRole adds the NATS rights of an administrator (the
// JetStream stream API, node backups; bus/natsauth); ViewerRole reads and
// signs nothing the ledger accepts.
const (
	OperatorRole = "operator"
	AdminRole    = "admin"
	ViewerRole   = "viewer"
)

// DefaultOperatorRoles are the roles of the operator credential InitRoot
// and Bootstrap write next to root.key: whoever can read that directory
// holds the root anyway, so its operator is the cluster's administrator.
var DefaultOperatorRoles = []string{OperatorRole, AdminRole}

// DefaultOperator is the id of the operator credential that InitRoot and
// Bootstrap write.
const DefaultOperator = "operator"

// CheckID accepts a subject id (node or operator): non-empty, only ASCII
// letters, digits, '-' and '_', since node ids are tokens of NATS subjects.
func CheckID(id string) error {
	if id == "" {
		return errors.New("trust: id must not be empty")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("trust: id %q: only letters, digits, '-' and '_' are allowed (it is used in subjects)", id)
		}
	}
	return nil
}

// InitRoot creates a new cluster root in dir (created 0700 if missing):
// root.key, root.pub and operator.creds for the operator DefaultOperator
// (DefaultOperatorRoles).
// It returns ErrExists, and writes nothing, when dir already holds any of
// the three files.
func InitRoot(dir string) (*Root, error) {
	for _, f := range []string{RootKeyFile, RootPubFile, OperatorCredsFile} {
		if err := absent(filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("trust: root dir %s: %w", dir, err)
	}
	root, err := NewRoot()
	if err != nil {
		return nil, err
	}
	if err := SaveRoot(dir, root); err != nil {
		return nil, err
	}
	op, err := NewIdentity(root, DefaultOperator, KindOperator, DefaultOperatorRoles, OperatorCredentialTTL)
	if err != nil {
		return nil, err
	}
	if err := WriteCreds(filepath.Join(dir, OperatorCredsFile), op, root); err != nil {
		return nil, err
	}
	return root, nil
}

// LoadIssuer loads a root that can issue credentials from path: a
// directory holding root.key, or a root.key file.
func LoadIssuer(path string) (*Root, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("trust: root: %w", err)
	}
	if st.IsDir() {
		root, err := LoadRoot(path)
		if err != nil {
			return nil, err
		}
		if !root.CanIssue() {
			return nil, fmt.Errorf("trust: %s holds no %s: credentials are issued where the root key is", path, RootKeyFile)
		}
		return root, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trust: read root key: %w", err)
	}
	blk, _ := pem.Decode(b)
	switch {
	case blk == nil:
		return nil, fmt.Errorf("trust: %s: no PEM block", path)
	case blk.Type == "PUBLIC KEY":
		return nil, fmt.Errorf("trust: %s is a public key: pass the root private key (%s) or its directory", path, RootKeyFile)
	}
	k, err := decodePrivate(blk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &Root{Public: k.Public().(ed25519.PublicKey), private: k}
	// A rotated root keeps what it trusts and inherited beside its key.
	dir := filepath.Dir(path)
	if err := loadRoots(dir, r); err != nil {
		return nil, err
	}
	if err := loadInherited(dir, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Enroll issues a node credential for nodeID with roles, signed by root
// and valid for ttl, and writes into dir (created 0700 if missing) the
// files Bootstrap loads: root.pub, node.key and node.cred. The private key
// of the root is not copied. It returns ErrExists when dir already holds a
// node key or credential, unless force; it always refuses a dir whose root
// files belong to another root.
func Enroll(dir string, root *Root, nodeID string, roles []string, ttl time.Duration, force bool) (*Identity, error) {
	if err := CheckID(nodeID); err != nil {
		return nil, err
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("trust: enroll %s: no roles", nodeID)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("trust: enroll %s: ttl must be positive, got %s", nodeID, ttl)
	}
	have, err := sameRoot(dir, root)
	if err != nil {
		return nil, err
	}
	if !force {
		for _, f := range []string{NodeKeyFile, NodeCredFile} {
			if err := absent(filepath.Join(dir, f)); err != nil {
				return nil, err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("trust: data dir %s: %w", dir, err)
	}
	id, err := NewIdentity(root, nodeID, KindNode, roles, ttl)
	if err != nil {
		return nil, err
	}
	if err := SaveRoot(dir, dataDirRoot(have, root)); err != nil {
		return nil, err
	}
	if err := SaveIdentity(dir, id); err != nil {
		return nil, err
	}
	return id, nil
}

// sameRoot refuses a dir whose root files are another cluster's: whose
// genesis root is not root's. It returns the dir's root (nil if none).
func sameRoot(dir string, root *Root) (*Root, error) {
	have, err := LoadRoot(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !have.Genesis().Equal(root.Genesis()):
		return nil, fmt.Errorf("trust: %s belongs to another cluster (root %s, not %s); use an empty directory", dir, have.GenesisID(), root.GenesisID())
	}
	return have, nil
}

// dataDirRoot is the root files a data dir enrolled by root holds:
// root.pub is the cluster's genesis root, roots.pub lists every other
// root the dir trusted (have, nil if none) or root trusts, root included.
func dataDirRoot(have, root *Root) *Root {
	d := &Root{Public: root.Genesis()}
	keys := root.Trusted()
	if have != nil {
		keys = append(keys, have.Trusted()...)
	}
	return d.WithTrusted(nil, keys...)
}

// absent returns ErrExists when path exists.
func absent(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return fmt.Errorf("%w: %s", ErrExists, path)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return fmt.Errorf("trust: %w", err)
	}
}
