package natsauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Bundle is what a server needs to enforce the cluster's NATS identities:
// the operator JWT and the two account JWTs. They are public (signed, not
// secret); the root holder makes them (Authority.Bundle) and every server
// of the cluster is given the same.
type Bundle struct {
	Operator      string `json:"operator"`
	SystemAccount string `json:"system_account"`
	Account       string `json:"account"`
}

// Bundle makes the operator and account JWTs, the AGENTIC account with the
// revocations revoked (see AccountJWT).
func (a *Authority) Bundle(revoked map[string]time.Time) (Bundle, error) {
	var b Bundle
	var err error
	if b.Operator, err = a.OperatorJWT(); err != nil {
		return Bundle{}, err
	}
	if b.SystemAccount, err = a.SystemAccountJWT(); err != nil {
		return Bundle{}, err
	}
	if b.Account, err = a.AccountJWT(revoked); err != nil {
		return Bundle{}, err
	}
	return b, nil
}

// Verified is a bundle whose JWTs were checked against each other.
type Verified struct {
	Operator      *jwt.OperatorClaims
	SystemAccount *jwt.AccountClaims
	Account       *jwt.AccountClaims
}

// Verify decodes the bundle and checks it: every JWT well signed, the
// operator self-signed and naming the system account, both accounts
// issued by the operator, the AGENTIC account with JetStream. If operator
// is not empty the operator must be that key (Authority.OperatorKey, as the
// root holder computes it).
func (b Bundle) Verify(operator string) (*Verified, error) {
	op, err := jwt.DecodeOperatorClaims(b.Operator)
	if err != nil {
		return nil, fmt.Errorf("natsauth: operator JWT: %w", err)
	}
	if op.Issuer != op.Subject {
		return nil, fmt.Errorf("natsauth: operator JWT is signed by %s, not by the operator %s", op.Issuer, op.Subject)
	}
	if operator != "" && op.Subject != operator {
		return nil, fmt.Errorf("natsauth: operator JWT is for %s, this root's operator is %s", op.Subject, operator)
	}
	sys, err := jwt.DecodeAccountClaims(b.SystemAccount)
	if err != nil {
		return nil, fmt.Errorf("natsauth: system account JWT: %w", err)
	}
	acc, err := jwt.DecodeAccountClaims(b.Account)
	if err != nil {
		return nil, fmt.Errorf("natsauth: account JWT: %w", err)
	}
	for _, c := range []*jwt.AccountClaims{sys, acc} {
		if c.Issuer != op.Subject {
			return nil, fmt.Errorf("natsauth: account %s (%s) is signed by %s, not by the operator %s", c.Name, c.Subject, c.Issuer, op.Subject)
		}
	}
	if op.SystemAccount != sys.Subject {
		return nil, fmt.Errorf("natsauth: the operator names system account %s, the bundle holds %s", op.SystemAccount, sys.Subject)
	}
	if !acc.Limits.IsJSEnabled() {
		return nil, fmt.Errorf("natsauth: account %s has no JetStream", acc.Subject)
	}
	return &Verified{Operator: op, SystemAccount: sys, Account: acc}, nil
}

// MaxControlLine is the control line size servers must accept for the
// CONNECT of an agentic user (its JWT inside): 16 KiB, with room to spare
// over the largest user JWT (a test measures them).
const MaxControlLine = 16 << 10

// accountUpdateReply is the server's answer to an account update.
type accountUpdateReply struct {
	Data *struct {
		Account string `json:"account"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"data,omitempty"`
	Error *struct {
		Account     string `json:"account"`
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error,omitempty"`
}

// PushAccount sends a new account JWT (Authority.AccountJWT, say with a
// revocation) to the servers over nc, a connection of a system account
// user (Authority.SystemUserCreds), and waits for one server's answer. The
// update reaches every server of the cluster (the system account spans
// it); each applies it at once and closes the connections of users it
// now revokes. A server restarted later knows only what it preloads: the
// bundle it is started with must carry the revocations too.
func PushAccount(ctx context.Context, nc *nats.Conn, accountJWT string) error {
	ac, err := jwt.DecodeAccountClaims(accountJWT)
	if err != nil {
		return fmt.Errorf("natsauth: push account: %w", err)
	}
	msg, err := nc.RequestWithContext(ctx, accountUpdateSubject(ac.Subject), []byte(accountJWT))
	if err != nil {
		return fmt.Errorf("natsauth: push account %s: %w", ac.Subject, err)
	}
	var r accountUpdateReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return fmt.Errorf("natsauth: push account %s: reply %q: %w", ac.Subject, msg.Data, err)
	}
	if r.Error != nil {
		return fmt.Errorf("natsauth: push account %s: the server says: %s (%d)", ac.Subject, r.Error.Description, r.Error.Code)
	}
	if r.Data == nil {
		return fmt.Errorf("natsauth: push account %s: empty reply %q", ac.Subject, msg.Data)
	}
	return nil
}

// ConnectOptions are the nats.go options with which identity connects:
// its user JWT, its user key signing the server's nonce, and its inbox
// prefix (the only inbox its permissions let it subscribe to).
func ConnectOptions(kind, id, userJWT string, user nkeys.KeyPair) ([]nats.Option, error) {
	if userJWT == "" || user == nil {
		return nil, errors.New("natsauth: connect: a user JWT and its key are needed")
	}
	seed, err := user.Seed()
	if err != nil {
		return nil, fmt.Errorf("natsauth: connect: %w", err)
	}
	return []nats.Option{
		nats.UserJWTAndSeed(userJWT, string(seed)),
		nats.CustomInboxPrefix(InboxPrefix(kind, id)),
	}, nil
}

// ServerConfig is the part of a nats-server configuration file that puts
// an external server in operator mode for bundle b, as
// bus/embedded.OperatorOptions does the embedded one: the operator JWT, the system account, a full account
// resolver storing account JWTs in resolverDir, the bundle's accounts
// preloaded, and the control line agentic's users need. Include it in
// every server's configuration (`include agentic-auth.conf`); the same
// text serves every server of a cluster but for resolverDir.
func ServerConfig(b Bundle, resolverDir string) (string, error) {
	v, err := b.Verify("")
	if err != nil {
		return "", err
	}
	if resolverDir == "" {
		return "", errors.New("natsauth: the account resolver needs a directory")
	}
	var s strings.Builder
	fmt.Fprintf(&s, "# agentic: NATS operator mode for the cluster whose root derives operator %s.\n", v.Operator.Subject)
	s.WriteString("# Only users the cluster's root issued connect (agentd nodes, agentctl\n")
	s.WriteString("# operators), each with its role's permissions (docs/security.md).\n")
	fmt.Fprintf(&s, "operator: %s\n", b.Operator)
	fmt.Fprintf(&s, "system_account: %s\n", v.SystemAccount.Subject)
	fmt.Fprintf(&s, "max_control_line: %d\n", MaxControlLine)
	fmt.Fprintf(&s, "resolver: {\n  type: full\n  dir: %q\n  allow_delete: false\n}\n", resolverDir)
	fmt.Fprintf(&s, "resolver_preload: {\n  %s: %s\n  %s: %s\n}\n", v.SystemAccount.Subject, b.SystemAccount, v.Account.Subject, b.Account)
	return s.String(), nil
}
