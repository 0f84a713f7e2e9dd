package natsauth

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Purposes of the seeds derived from the root (trust.Root.DeriveSeed) and
// from an identity's key (trust.Identity.DeriveSeed). Changing one changes
// every NATS key: they are part of the protocol.
const (
	PurposeOperator      = "agentic/nats/operator/v1"
	PurposeSystemAccount = "agentic/nats/account/SYS/v1"
	PurposeAccount       = "agentic/nats/account/AGENTIC/v1"
	PurposeUser          = trust.NATSUserPurpose
)

// ClusterPurposes are the purposes whose keys a rotated root inherits
// (trust.Rotate): the NATS operator and accounts stay those of the
// genesis root, so that servers trust the same operator and the AGENTIC
// account — which owns the JetStream streams — stays the same across a
// root rotation; only the account signing key changes (SigningKey).
var ClusterPurposes = []string{PurposeOperator, PurposeSystemAccount, PurposeAccount}

// RotateRoot makes the root that succeeds old (trust.Rotate), inheriting
// the NATS operator and accounts (ClusterPurposes).
func RotateRoot(old *trust.Root) (*trust.Root, error) {
	r, err := trust.Rotate(old, ClusterPurposes...)
	if err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	return r, nil
}

// Names of the NATS operator and accounts (as the JWTs name them).
const (
	OperatorName      = "agentic"
	SystemAccountName = "SYS"
	AccountName       = "AGENTIC"
)

// Authority holds the NATS operator and account keys derived from an
// issuing root: it makes the operator JWT, the account JWTs and user JWTs.
// It exists only where root.key is (agentctl keys/enroll/revoke, or a
// single node that holds its root).
type Authority struct {
	operator, system, account nkeys.KeyPair
	// signing is the account signing key of the issuing root, which signs
	// the users it issues; roots are the KeyIDs of the roots whose signing
	// keys the account JWT lists (SigningKey).
	signing nkeys.KeyPair
	roots   []string
}

// NewAuthority derives the NATS operator, system account and AGENTIC
// account keys from root, which must hold its private key.
func NewAuthority(root *trust.Root) (*Authority, error) {
	if root == nil || !root.CanIssue() {
		return nil, errors.New("natsauth: the NATS authority needs the root private key (root.key)")
	}
	if root.GenesisID() != root.KeyID() {
		for _, p := range ClusterPurposes {
			if !root.Inherits(p) {
				return nil, fmt.Errorf("natsauth: root %s was rotated from the cluster's genesis root %s, but the NATS keys it inherited (%s, next to its root.key) are missing", root.KeyID(), root.GenesisID(), trust.InheritedFile)
			}
		}
	}
	a := &Authority{}
	for _, k := range []struct {
		dst     *nkeys.KeyPair
		purpose string
		prefix  nkeys.PrefixByte
	}{
		{&a.operator, PurposeOperator, nkeys.PrefixByteOperator},
		{&a.system, PurposeSystemAccount, nkeys.PrefixByteAccount},
		{&a.account, PurposeAccount, nkeys.PrefixByteAccount},
	} {
		seed, err := root.DeriveSeed(k.purpose)
		if err != nil {
			return nil, fmt.Errorf("natsauth: %w", err)
		}
		kp, err := nkeys.FromRawSeed(k.prefix, seed)
		if err != nil {
			return nil, fmt.Errorf("natsauth: %s key: %w", k.purpose, err)
		}
		*k.dst = kp
	}
	for _, k := range root.Trusted() {
		a.roots = append(a.roots, trust.Fingerprint(k))
	}
	var err error
	if a.signing, err = a.signingKey(root.KeyID()); err != nil {
		return nil, err
	}
	return a, nil
}

// PurposeSigningKey prefixes the purpose of an account signing key: the
// seed of root R's is HKDF(AGENTIC account seed, PurposeSigningKey+R).
const PurposeSigningKey = "agentic/nats/account/AGENTIC/signing/v1/"

// signingKey derives the AGENTIC account's signing key of the root keyID
// from the account's seed: whoever holds the account key (the genesis
// root, or a root that inherited it) can name every root's.
func (a *Authority) signingKey(keyID string) (nkeys.KeyPair, error) {
	seed, err := a.account.Seed()
	if err != nil {
		return nil, fmt.Errorf("natsauth: account seed: %w", err)
	}
	_, raw, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("natsauth: account seed: %w", err)
	}
	k, err := hkdf.Key(sha256.New, raw, []byte("agentic derived key"), PurposeSigningKey+keyID, 32)
	if err != nil {
		return nil, fmt.Errorf("natsauth: signing key of root %s: %w", keyID, err)
	}
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteAccount, k)
	if err != nil {
		return nil, fmt.Errorf("natsauth: signing key of root %s: %w", keyID, err)
	}
	return kp, nil
}

// SigningKey is the public AGENTIC account signing key (A…) of the root
// keyID: the issuer of the user JWTs that root's holder issues. The
// account JWT lists the signing keys of the roots the authority trusts;
// a user whose signing key it no longer lists is refused, and its
// connections are closed once the servers have the JWT — the NATS
// cutover of a root rotation (docs/security.md).
func (a *Authority) SigningKey(keyID string) (string, error) {
	kp, err := a.signingKey(keyID)
	if err != nil {
		return "", err
	}
	return mustPublic(kp), nil
}

// Roots are the KeyIDs of the roots whose signing keys the account JWTs
// of a list: the issuing root's Trusted roots.
func (a *Authority) Roots() []string { return slices.Clone(a.roots) }

// OperatorKey is the operator's public nkey (O…): what servers trust.
func (a *Authority) OperatorKey() string { return mustPublic(a.operator) }

// SystemAccountKey is the system account's public nkey (A…).
func (a *Authority) SystemAccountKey() string { return mustPublic(a.system) }

// AccountKey is the AGENTIC account's public nkey (A…): the account every
// node and operator connects to.
func (a *Authority) AccountKey() string { return mustPublic(a.account) }

func mustPublic(kp nkeys.KeyPair) string {
	pub, err := kp.PublicKey()
	if err != nil {
		// A key pair made from a seed always has a public key.
		panic(fmt.Sprintf("natsauth: public key of a derived key: %v", err))
	}
	return pub
}

// OperatorJWT is the operator JWT servers trust (self-signed by the
// operator key, naming the system account).
func (a *Authority) OperatorJWT() (string, error) {
	oc := jwt.NewOperatorClaims(a.OperatorKey())
	oc.Name = OperatorName
	oc.SystemAccount = a.SystemAccountKey()
	s, err := oc.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("natsauth: operator JWT: %w", err)
	}
	return s, nil
}

// SystemAccountJWT is the system account's JWT, signed by the operator.
func (a *Authority) SystemAccountJWT() (string, error) {
	ac := jwt.NewAccountClaims(a.SystemAccountKey())
	ac.Name = SystemAccountName
	s, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("natsauth: system account JWT: %w", err)
	}
	return s, nil
}

// AccountJWT is the AGENTIC account's JWT, signed by the operator, with
// JetStream enabled (no limits: the streams carry their own), the signing
// keys of the roots the authority trusts (SigningKey), and every
// user key of revoked revoked from its time on (a user JWT issued before
// that time is refused, and its connections closed once the servers have
// the JWT: PushAccount). Each call makes a JWT of its own issue time; the
// servers take the newest.
func (a *Authority) AccountJWT(revoked map[string]time.Time) (string, error) {
	ac := jwt.NewAccountClaims(a.AccountKey())
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{
		MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit,
	}
	for _, id := range a.roots {
		k, err := a.SigningKey(id)
		if err != nil {
			return "", err
		}
		ac.SigningKeys.Add(k)
	}
	for user, at := range revoked {
		if !nkeys.IsValidPublicUserKey(user) {
			return "", fmt.Errorf("natsauth: revoke %q: not a NATS user public key", user)
		}
		ac.RevokeAt(user, at)
	}
	s, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("natsauth: account JWT: %w", err)
	}
	return s, nil
}

// Identity is who a user JWT is issued for: an agentic identity's kind
// (trust.KindNode or trust.KindOperator), id and roles, and its NATS user
// public key (UserKey).
type Identity struct {
	Kind  string
	ID    string
	Roles []string
	// UserKey is the identity's NATS user public key (U…).
	UserKey string
}

// UserJWT issues the user JWT of id in the AGENTIC account, signed by the
// issuing root's account signing key (SigningKey), with the permissions of its kind and roles (Permissions),
// valid until expires (the expiry of its agentic credential: a user JWT
// never outlives it).
func (a *Authority) UserJWT(id Identity, expires time.Time) (string, error) {
	if !nkeys.IsValidPublicUserKey(id.UserKey) {
		return "", fmt.Errorf("natsauth: user %s: %q is not a NATS user public key", id.ID, id.UserKey)
	}
	perms, err := Permissions(id.Kind, id.ID, id.Roles)
	if err != nil {
		return "", err
	}
	if !expires.After(time.Now()) {
		return "", fmt.Errorf("natsauth: user %s: expiry %s is not in the future", id.ID, expires.Format(time.RFC3339))
	}
	uc := jwt.NewUserClaims(id.UserKey)
	uc.Name = id.Kind + ":" + id.ID
	uc.Expires = expires.Unix()
	uc.Permissions = perms
	uc.Tags.Add("kind:"+id.Kind, "id:"+id.ID)
	for _, r := range id.Roles {
		uc.Tags.Add("role:" + r)
	}
	return a.encodeUser(uc, id.ID)
}

// encodeUser signs a user JWT with the issuing root's account signing key.
func (a *Authority) encodeUser(uc *jwt.UserClaims, name string) (string, error) {
	uc.IssuerAccount = a.AccountKey()
	s, err := uc.Encode(a.signing)
	if err != nil {
		return "", fmt.Errorf("natsauth: user JWT for %s: %w", name, err)
	}
	return s, nil
}

// CustomUserJWT issues a user JWT in the AGENTIC account with the
// permissions perms, not a role's: for tools and test harnesses that need
// what no agentic identity is given (a test that writes a history signed
// by many identities). Nodes and operators get Permissions, through
// UserJWT.
func (a *Authority) CustomUserJWT(name, userKey string, perms jwt.Permissions, expires time.Time) (string, error) {
	if !nkeys.IsValidPublicUserKey(userKey) {
		return "", fmt.Errorf("natsauth: user %s: %q is not a NATS user public key", name, userKey)
	}
	uc := jwt.NewUserClaims(userKey)
	uc.Name = name
	uc.Expires = expires.Unix()
	uc.Permissions = perms
	return a.encodeUser(uc, name)
}

// SystemUserCreds issues a short-lived user of the system account, with
// the right to publish account updates only: what the root holder uses to
// push a new AGENTIC account JWT (a revocation) to the servers
// (PushAccount). The seed is fresh, never stored.
func (a *Authority) SystemUserCreds(ttl time.Duration) (jwtStr string, seed []byte, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", nil, fmt.Errorf("natsauth: system user key: %w", err)
	}
	pub, _ := kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "agentic-account-push"
	uc.Expires = time.Now().Add(ttl).Unix()
	uc.Permissions.Pub.Allow.Add(accountUpdateSubject("*"), "$SYS.REQ.CLAIMS.UPDATE")
	uc.Permissions.Sub.Allow.Add("_INBOX.>")
	jwtStr, err = uc.Encode(a.system)
	if err != nil {
		return "", nil, fmt.Errorf("natsauth: system user JWT: %w", err)
	}
	seed, err = kp.Seed()
	if err != nil {
		return "", nil, fmt.Errorf("natsauth: system user seed: %w", err)
	}
	return jwtStr, seed, nil
}

// UserKey derives the NATS user key pair of an identity from its private
// key: its public key is what the user JWT names, its seed what the
// client signs the server's nonce with.
func UserKey(id *trust.Identity) (nkeys.KeyPair, error) {
	seed, err := id.DeriveSeed(PurposeUser)
	if err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, seed)
	if err != nil {
		return nil, fmt.Errorf("natsauth: user key of %s: %w", id.ID, err)
	}
	return kp, nil
}

// Creds formats a NATS credentials file (the format of nats.UserCredentials
// and of the nats CLI's --creds) from a user JWT and the user's key.
func Creds(userJWT string, user nkeys.KeyPair) ([]byte, error) {
	seed, err := user.Seed()
	if err != nil {
		return nil, fmt.Errorf("natsauth: creds: %w", err)
	}
	b, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		return nil, fmt.Errorf("natsauth: creds: %w", err)
	}
	return b, nil
}
