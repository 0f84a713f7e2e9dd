// Package trust is the cluster's chain of trust, modelled on NATS's
// operator/account/user JWTs: one Ed25519 root key signs credentials; a
// credential binds a node id (or operator id) to a public key, a set of roles
// and an expiry. Receivers hold only the root public key: an event is trusted
// when its signer presents a credential the root signed, that is unexpired
// and whose roles allow the event's type. An administrator revokes a
// credential before it expires with a credential.revoked event: ledger
// nodes refuse what it signs from that event's stream position on
// (docs/protocol.md).
//
// Files in a data directory (all written 0600, created by Bootstrap):
//
//	root.key        the root private key (PKCS#8 PEM) — keep it offline in production
//	root.pub        the root public key (PKIX PEM) — every node and CLI needs it
//	node.key        this node's private key
//	node.cred       this node's credential (a JWT signed by the root)
//	operator.creds  credential + private key + root public key for agentctl
package trust

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Errors callers test for.
var (
	// ErrBadCredential marks a credential that is malformed, forged, expired
	// or not made for the key that signed an event.
	ErrBadCredential = errors.New("trust: bad credential")
	// ErrExpired marks a credential that had expired when it was judged
	// (such errors match ErrBadCredential too).
	ErrExpired = errors.New("trust: credential expired")
)

// Credential kinds.
const (
	KindNode     = "node"
	KindOperator = "operator"
)

// CredentialClaims are the claims of a credential JWT.
type CredentialClaims struct {
	jwt.RegisteredClaims
	// Kind is KindNode or KindOperator.
	Kind string `json:"kind"`
	// PublicKey is the subject's Ed25519 public key, base64url (no padding).
	PublicKey string `json:"pub"`
	// Roles the subject may act as (event.Role*).
	Roles []string `json:"roles"`
	// NATSUser is the subject's NATS user public key (NATSUserKey of its
	// private key), so that whoever sees the credential — a ledger node,
	// the administrator revoking it — knows the NATS user to revoke with
	// it. Absent from credentials issued before it existed.
	NATSUser string `json:"nats,omitempty"`
}

// Credential is a verified credential.
type Credential struct {
	// ID is the subject: node id or operator id.
	ID        string
	Kind      string
	Roles     []string
	PublicKey ed25519.PublicKey
	// NATSUser is the NATS user key the credential names ("" if none).
	NATSUser string
	// Issuer is the KeyID of the root that issued it.
	Issuer  string
	Issued  time.Time
	Expires time.Time
	// Raw is the credential JWT as issued.
	Raw string
}

// HasRole reports whether the credential carries role.
func (c *Credential) HasRole(role string) bool { return slices.Contains(c.Roles, role) }

// Root is the trust anchor: the root public key, and optionally the private
// key that can issue credentials.
type Root struct {
	Public  ed25519.PublicKey
	private ed25519.PrivateKey
	// genesis is the cluster's genesis root when it is not Public (a
	// rotated root); also are the other roots this holder trusts
	// (roots.go).
	genesis        ed25519.PublicKey
	genesisRetired bool
	also           []ed25519.PublicKey
	// inherited are the seeds of purposes it derives as the root it was
	// rotated from did (Inherit).
	inherited map[string][]byte
}

// NewRoot makes a fresh root key pair.
func NewRoot() (*Root, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("trust: generate root key: %w", err)
	}
	return &Root{Public: pub, private: priv}, nil
}

// CanIssue reports whether the root holds its private key.
func (r *Root) CanIssue() bool { return r.private != nil }

// KeyID is a short fingerprint of the root public key, the issuer of every
// credential it signs.
func (r *Root) KeyID() string { return Fingerprint(r.Public) }

// Fingerprint is the first 16 hex digits of sha256 of a public key.
func Fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Issue signs a credential for id with the given kind, public key and roles,
// valid for ttl.
func (r *Root) Issue(id, kind string, pub ed25519.PublicKey, roles []string, ttl time.Duration) (string, error) {
	return r.issue(id, kind, pub, "", roles, ttl)
}

func (r *Root) issue(id, kind string, pub ed25519.PublicKey, natsUser string, roles []string, ttl time.Duration) (string, error) {
	if !r.CanIssue() {
		return "", errors.New("trust: root private key not available; issue credentials where root.key is")
	}
	if id == "" {
		return "", errors.New("trust: credential needs a subject id")
	}
	now := time.Now()
	c := CredentialClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    r.KeyID(),
			Subject:   id,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Kind:      kind,
		PublicKey: base64.RawURLEncoding.EncodeToString(pub),
		Roles:     roles,
		NATSUser:  natsUser,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	s, err := tok.SignedString(r.private)
	if err != nil {
		return "", fmt.Errorf("trust: sign credential for %s: %w", id, err)
	}
	return s, nil
}

// Verify checks a credential JWT against the root at time now, by this
// machine's clock (no leeway): for a node's own credential and the CLI.
func (r *Root) Verify(raw string, now time.Time) (*Credential, error) {
	return r.VerifyWithin(raw, now, 0)
}

// VerifyWithin checks a credential JWT against the root as of now, which
// may be leeway past its expiry: how receivers judge the credential an
// event presents, at the event's stream time with the protocol's leeway
// for clock skew (bus/envelope). An expired credential's error also
// matches ErrExpired. A credential another root issued verifies when r
// trusts that root (its iss is the KeyID of one of r.Trusted()).
func (r *Root) VerifyWithin(raw string, now time.Time, leeway time.Duration) (*Credential, error) {
	return VerifyWith(r, raw, now, leeway)
}

// VerifyWith checks a credential JWT as VerifyWithin does, with the key
// of the root its iss names, found in keys.
func VerifyWith(keys Keyring, raw string, now time.Time, leeway time.Duration) (*Credential, error) {
	var c CredentialClaims
	_, err := jwt.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		iss, _ := t.Claims.GetIssuer()
		k, ok := keys.RootKey(iss)
		if !ok {
			return nil, fmt.Errorf("issuer %q is not a trusted root", iss)
		}
		return k, nil
	},
		jwt.WithValidMethods([]string{"EdDSA"}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if errors.Is(err, jwt.ErrTokenExpired) {
		return nil, fmt.Errorf("%w: %w: %w", ErrBadCredential, ErrExpired, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCredential, err)
	}
	return credentialOf(c, raw)
}

// ReadCredential reads a credential JWT without verifying its signature
// or its times: for what was verified before, such as the credential of a
// message a ledger accepted, read back from the ledger's stored copy.
// Never trust what it returns on its own.
func ReadCredential(raw string) (*Credential, error) {
	var c CredentialClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCredential, err)
	}
	if c.ExpiresAt == nil {
		return nil, fmt.Errorf("%w: no expiry", ErrBadCredential)
	}
	return credentialOf(c, raw)
}

// credentialOf is the Credential of claims c, read from raw.
func credentialOf(c CredentialClaims, raw string) (*Credential, error) {
	pub, err := base64.RawURLEncoding.DecodeString(c.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: public key is not an Ed25519 key", ErrBadCredential)
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", ErrBadCredential)
	}
	return &Credential{
		ID:        c.Subject,
		Kind:      c.Kind,
		Roles:     c.Roles,
		PublicKey: ed25519.PublicKey(pub),
		NATSUser:  c.NATSUser,
		Issuer:    c.Issuer,
		Issued:    issued(c),
		Expires:   c.ExpiresAt.Time,
		Raw:       raw,
	}, nil
}

// Identity is what a signer holds: its private key and its credential.
type Identity struct {
	ID         string
	Key        ed25519.PrivateKey
	Credential string
	Roles      []string
}

// NewIdentity makes a key pair for id and has root issue its credential.
func NewIdentity(root *Root, id, kind string, roles []string, ttl time.Duration) (*Identity, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("trust: generate key for %s: %w", id, err)
	}
	natsUser, err := NATSUserKey(priv)
	if err != nil {
		return nil, err
	}
	cred, err := root.issue(id, kind, pub, natsUser, roles, ttl)
	if err != nil {
		return nil, err
	}
	return &Identity{ID: id, Key: priv, Credential: cred, Roles: roles}, nil
}

func encodePrivate(k ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("trust: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func encodePublic(k ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return nil, fmt.Errorf("trust: encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func decodePrivate(b *pem.Block) (ed25519.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("trust: parse private key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("trust: private key is %T, want Ed25519", k)
	}
	return ek, nil
}

func decodePublic(b *pem.Block) (ed25519.PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("trust: parse public key: %w", err)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("trust: public key is %T, want Ed25519", k)
	}
	return ek, nil
}
