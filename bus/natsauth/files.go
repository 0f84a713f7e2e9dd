package natsauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Files of a data directory (next to trust's root.pub, node.key and
// node.cred). Both are public: signed, not secret.
const (
	// BundleFile holds the bundle (operator and account JWTs) the
	// embedded nats-server trusts.
	BundleFile = "nats-bundle.json"
	// UserJWTFile holds the node's NATS user JWT; its key is derived
	// from node.key at start (UserKey).
	UserJWTFile = "node.nats.jwt"
)

// SaveBundle writes b into dir as BundleFile.
func SaveBundle(dir string, b Bundle) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return fmt.Errorf("natsauth: bundle: %w", err)
	}
	return trust.WriteFile(filepath.Join(dir, BundleFile), append(data, '\n'))
}

// LoadBundle reads and verifies dir's BundleFile. An absent file gives an
// error wrapping fs.ErrNotExist.
func LoadBundle(dir string) (Bundle, error) {
	path := filepath.Join(dir, BundleFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Bundle{}, fmt.Errorf("natsauth: read the NATS bundle: %w", err)
	}
	var b Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		return Bundle{}, fmt.Errorf("natsauth: %s: %w", path, err)
	}
	if _, err := b.Verify(""); err != nil {
		return Bundle{}, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// IssueUser issues the user JWT of id (a node or an operator credential
// that root issued), valid as long as its credential.
func (a *Authority) IssueUser(root *trust.Root, id *trust.Identity) (string, nkeys.KeyPair, error) {
	cred, err := root.Verify(id.Credential, time.Now())
	if err != nil {
		return "", nil, fmt.Errorf("natsauth: user of %s: %w", id.ID, err)
	}
	kp, err := UserKey(id)
	if err != nil {
		return "", nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", nil, fmt.Errorf("natsauth: user key of %s: %w", id.ID, err)
	}
	j, err := a.UserJWT(Identity{Kind: cred.Kind, ID: cred.ID, Roles: cred.Roles, UserKey: pub}, cred.Expires)
	if err != nil {
		return "", nil, err
	}
	return j, kp, nil
}

// IssueNode writes into dir what a node of id needs to connect: the
// bundle (unless dir holds one of the same operator) and its user JWT.
func (a *Authority) IssueNode(dir string, root *trust.Root, id *trust.Identity) error {
	if err := a.ensureBundle(dir); err != nil {
		return err
	}
	j, _, err := a.IssueUser(root, id)
	if err != nil {
		return err
	}
	return trust.WriteFile(filepath.Join(dir, UserJWTFile), []byte(j+"\n"))
}

// ensureBundle writes dir's bundle unless it holds a valid one of this
// authority's operator (which may carry revocations since).
func (a *Authority) ensureBundle(dir string) error {
	if b, err := LoadBundle(dir); err == nil {
		if _, err := b.Verify(a.OperatorKey()); err == nil {
			return nil
		}
	}
	b, err := a.Bundle(nil)
	if err != nil {
		return err
	}
	return SaveBundle(dir, b)
}

// WriteCreds writes the creds file of an operator identity id: its NATS
// user JWT and key first (what nats.UserCredentials and the nats CLI's
// --creds read), then the agentic credential, key and root public key
// (trust.WriteCreds; what trust.ReadCreds reads). One file serves both.
func (a *Authority) WriteCreds(path string, root *trust.Root, id *trust.Identity) error {
	j, kp, err := a.IssueUser(root, id)
	if err != nil {
		return err
	}
	natsPart, err := Creds(j, kp)
	if err != nil {
		return err
	}
	if err := trust.WriteCreds(path, id, root); err != nil {
		return err
	}
	agentic, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("natsauth: creds %s: %w", path, err)
	}
	return trust.WriteFile(path, append(natsPart, agentic...))
}

// User is a NATS user as a client presents it: its JWT, the key that
// signs the server's nonce, and who it is.
type User struct {
	JWT  string
	Key  nkeys.KeyPair
	Kind string
	ID   string
	// Roles are the roles its JWT was issued for.
	Roles   []string
	Expires time.Time
}

// Inbox is the user's inbox prefix (InboxPrefix).
func (u *User) Inbox() string { return InboxPrefix(u.Kind, u.ID) }

// ErrNoUser marks a data directory or creds file without a NATS user: one
// issued before the bus required them.
var ErrNoUser = errors.New("natsauth: no NATS user")

// LoadNodeUser reads dir's user JWT and derives its key from id: the
// node's NATS user. The JWT must be for that key and not expired.
func LoadNodeUser(dir string, id *trust.Identity) (*User, error) {
	path := filepath.Join(dir, UserJWTFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is absent", ErrNoUser, path)
	}
	if err != nil {
		return nil, fmt.Errorf("natsauth: read the node's NATS user: %w", err)
	}
	kp, err := UserKey(id)
	if err != nil {
		return nil, err
	}
	u, err := userFrom(strings.TrimSpace(string(b)), kp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if u.Kind != trust.KindNode || u.ID != id.ID {
		return nil, fmt.Errorf("%s: the NATS user is %s %s, this node is %s", path, u.Kind, u.ID, id.ID)
	}
	if !sameSet(u.Roles, id.Roles) {
		return nil, fmt.Errorf("%s: the NATS user has roles %v, the node's credential %v", path, u.Roles, id.Roles)
	}
	return u, nil
}

// ReadCreds reads the NATS user of a creds file (WriteCreds, or a NATS
// credentials file). A creds file without one gives ErrNoUser.
func ReadCreds(path string) (*User, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("natsauth: read creds: %w", err)
	}
	return parseCreds(path, b)
}

// parseCreds parses the creds file read from path as b (ReadCreds).
func parseCreds(path string, b []byte) (*User, error) {
	j, kp, err := parseDecorated(b) // jwt.ParseDecoratedJWT and ParseDecoratedNKey, in one scan
	if !strings.HasPrefix(strings.TrimSpace(j), "ey") {
		return nil, fmt.Errorf("%w in %s", ErrNoUser, path)
	}
	if err != nil {
		return nil, fmt.Errorf("natsauth: %s: the NATS user's key: %w", path, err)
	}
	// A client's creds file: the server checks the JWT's signature when
	// it connects (peekUserClaims).
	c, err := peekUserClaims(j)
	if err != nil {
		return nil, fmt.Errorf("%s: natsauth: user JWT: %w", path, err)
	}
	u, err := userOf(j, c, kp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// userFrom checks that j is a user JWT (its signature included) for kp's
// public key, not expired, and reads who it is from its tags.
func userFrom(j string, kp nkeys.KeyPair) (*User, error) {
	uc, err := jwt.DecodeUserClaims(j)
	if err != nil {
		return nil, fmt.Errorf("natsauth: user JWT: %w", err)
	}
	var c userClaims
	c.Name, c.Subject, c.Expires, c.Nats.Tags = uc.Name, uc.Subject, uc.Expires, uc.Tags
	return userOf(j, c, kp)
}

// userOf checks that the user JWT j, whose claims are uc, is for kp's
// public key and not expired, and reads who it is from its tags.
func userOf(j string, uc userClaims, kp nkeys.KeyPair) (*User, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("natsauth: user key: %w", err)
	}
	if uc.Subject != pub {
		return nil, fmt.Errorf("natsauth: the user JWT is for %s, the key is %s (issued for another key: enroll again)", uc.Subject, pub)
	}
	u := &User{JWT: j, Key: kp}
	if uc.Expires > 0 {
		u.Expires = time.Unix(uc.Expires, 0)
		if !u.Expires.After(time.Now()) {
			return nil, fmt.Errorf("natsauth: the NATS user %s expired at %s", uc.Name, u.Expires.UTC().Format(time.RFC3339))
		}
	}
	for _, tag := range uc.Nats.Tags {
		k, v, _ := strings.Cut(tag, ":")
		switch k {
		case "kind":
			u.Kind = v
		case "id":
			u.ID = v
		case "role":
			u.Roles = append(u.Roles, v)
		}
	}
	if u.Kind == "" || u.ID == "" {
		// A NATS user not issued by agentic (a creds file of the
		// operator's own): its name is its own business; its inbox is the
		// default one.
		u.Kind, u.ID = "", uc.Name
	}
	return u, nil
}

// PrepareDataDir makes sure a data directory whose root holds its private
// key (a single node, or the root's own directory) has what its node
// needs to connect: the bundle and a user JWT for id, issued again when
// absent, for another key or roles, or expiring at another time than id's
// credential (renewed: trust.RenewNode); and
// that operator.creds there carries its NATS user (PrepareRoot). Without
// root.key it does nothing: the node's files come from 'agentctl node
// enroll'.
func PrepareDataDir(dir string, root *trust.Root, id *trust.Identity) error {
	if !root.CanIssue() {
		return nil
	}
	a, err := PrepareRoot(dir, root)
	if err != nil {
		return err
	}
	if u, err := LoadNodeUser(dir, id); err != nil || u.JWT == "" || !sameExpiry(u, root, id) {
		if err := a.IssueNode(dir, root, id); err != nil {
			return err
		}
	}
	return nil
}

// PrepareRoot gives the directory of an issuing root its NATS files: the
// bundle, and the NATS user in its operator.creds if that file is there
// without one (written before the bus required it). It returns the
// root's NATS authority.
func PrepareRoot(dir string, root *trust.Root) (*Authority, error) {
	a, err := NewAuthority(root)
	if err != nil {
		return nil, err
	}
	if err := a.ensureBundle(dir); err != nil {
		return nil, err
	}
	creds := filepath.Join(dir, trust.OperatorCredsFile)
	if _, err := ReadCreds(creds); errors.Is(err, ErrNoUser) {
		op, _, err := trust.ReadCreds(creds)
		if err != nil {
			return nil, fmt.Errorf("natsauth: add the NATS user to %s: %w", creds, err)
		}
		if err := a.WriteCreds(creds, root, op); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// InitRoot is trust.InitRoot with the NATS files: a new cluster root in
// dir, its bundle, and operator.creds with its NATS user.
func InitRoot(dir string) (*trust.Root, error) {
	root, err := trust.InitRoot(dir)
	if err != nil {
		return nil, err
	}
	if _, err := PrepareRoot(dir, root); err != nil {
		return nil, err
	}
	return root, nil
}

// Enroll is trust.Enroll with the NATS files: the node's credential,
// key and root.pub, and its NATS user JWT and the bundle.
func Enroll(dir string, root *trust.Root, nodeID string, roles []string, ttl time.Duration, force bool) (*trust.Identity, error) {
	id, err := trust.Enroll(dir, root, nodeID, roles, ttl, force)
	if err != nil {
		return nil, err
	}
	a, err := NewAuthority(root)
	if err != nil {
		return nil, err
	}
	if err := a.IssueNode(dir, root, id); err != nil {
		return nil, err
	}
	return id, nil
}

// WriteOperatorCreds writes the creds file of operator identity id,
// issued by root, with its NATS user (Authority.WriteCreds).
func WriteOperatorCreds(path string, root *trust.Root, id *trust.Identity) error {
	a, err := NewAuthority(root)
	if err != nil {
		return err
	}
	return a.WriteCreds(path, root, id)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// CredsOptions are the nats.go options of a client connecting with the
// NATS user of the creds file at path (ReadCreds): the user JWT and key,
// and the user's inbox prefix (the default one for a NATS user agentic did
// not issue).
//
// The file is read again at every connection, so a renewed one is
// presented at the next; it is parsed again only when it changed
// (credsfile.go).
func CredsOptions(path string) ([]nats.Option, *User, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("natsauth: read creds: %w", err)
	}
	return CredsOptionsFrom(path, b)
}

// CredsOptionsFrom is CredsOptions for a creds file already read from
// path as b (trust.Creds.Raw), so that a CLI reads and parses it once;
// each connection reads the file again but parses it only if it changed.
func CredsOptionsFrom(path string, b []byte) ([]nats.Option, *User, error) {
	u, err := parseCreds(path, b)
	if err != nil {
		return nil, nil, err
	}
	opts := []nats.Option{newCredsFile(path, b, u).option()}
	if u.Kind != "" {
		opts = append(opts, nats.CustomInboxPrefix(u.Inbox()))
	}
	return opts, u, nil
}

// sameExpiry reports whether u expires when id's credential does (a user
// JWT is issued for its credential's lifetime).
func sameExpiry(u *User, root *trust.Root, id *trust.Identity) bool {
	c, err := root.Verify(id.Credential, time.Now())
	return err == nil && u.Expires.Unix() == c.Expires.Unix()
}

// NodeConnectOptions are the nats.go options with which the node id of the
// data directory dir connects: its inbox prefix, and its user JWT read
// from dir at every connection (a renewed one is presented at the next
// reconnection: the server closes a connection whose JWT expires), with
// the nonce signed by the key derived from id's node.key.
func NodeConnectOptions(dir string, id *trust.Identity) ([]nats.Option, error) {
	if _, err := LoadNodeUser(dir, id); err != nil {
		return nil, err
	}
	kp, err := UserKey(id)
	if err != nil {
		return nil, err
	}
	user := func() (string, error) {
		u, err := LoadNodeUser(dir, id)
		if err != nil {
			return "", err
		}
		return u.JWT, nil
	}
	return []nats.Option{
		nats.UserJWT(user, func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) }),
		nats.CustomInboxPrefix(InboxPrefix(trust.KindNode, id.ID)),
	}, nil
}

// RenewNode renews the node credential in dir for ttl (trust.RenewNode:
// same key, roles and NATS user) and issues its NATS user JWT for the new
// lifetime: what the root holder runs to renew a node without its private
// key. A credential issued before credentials named their NATS user needs
// node.key in dir to derive it.
func RenewNode(dir string, root *trust.Root, ttl time.Duration) (*trust.Credential, error) {
	a, err := NewAuthority(root)
	if err != nil {
		return nil, err
	}
	c, err := trust.RenewNode(dir, root, ttl)
	if err != nil {
		return nil, err
	}
	user := c.NATSUser
	if user == "" {
		id, err := trust.LoadIdentity(dir, root)
		if err != nil {
			return nil, fmt.Errorf("natsauth: the credential names no NATS user and node.key cannot be read to derive it: %w", err)
		}
		kp, err := UserKey(id)
		if err != nil {
			return nil, err
		}
		if user, err = kp.PublicKey(); err != nil {
			return nil, fmt.Errorf("natsauth: %w", err)
		}
	}
	j, err := a.UserJWT(Identity{Kind: c.Kind, ID: c.ID, Roles: c.Roles, UserKey: user}, c.Expires)
	if err != nil {
		return nil, err
	}
	if err := a.ensureBundle(dir); err != nil {
		return nil, err
	}
	if err := trust.WriteFile(filepath.Join(dir, UserJWTFile), []byte(j+"\n")); err != nil {
		return nil, err
	}
	return c, nil
}

// UserOptions issues the NATS user of id (IssueUser) and returns the
// nats.go options it connects with (ConnectOptions): for a process that
// holds both the root and the identity, such as a test or a tool run
// where root.key is.
func (a *Authority) UserOptions(root *trust.Root, id *trust.Identity) ([]nats.Option, error) {
	j, kp, err := a.IssueUser(root, id)
	if err != nil {
		return nil, err
	}
	c, err := root.Verify(id.Credential, time.Now())
	if err != nil {
		return nil, fmt.Errorf("natsauth: user of %s: %w", id.ID, err)
	}
	return ConnectOptions(c.Kind, id.ID, j, kp)
}
