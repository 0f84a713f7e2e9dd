package api

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
)

// Signed answers (protocol version 7; docs/protocol.md, "Signed
// answers"). A Server with an identity (Server.Sign) puts a signature
// beside every answer (HeaderSignature: envelope.SignReply over the
// method, the subject the request came on, RequestHash and BodyHash). A
// Client with a Trust (Client.WithTrust) sends a fresh nonce with every
// request (HeaderNonce) and takes an answer only when its signature
// verifies and says what the client asked, its body is the body signed,
// and its signer may answer: a node of the named node's id on its own
// subject; a node holding one of natsauth.AnswerRoles for every method
// but natsauth.PerNodeMethods; a credential not revoked. Anything else is
// refused before the caller sees a byte of it (ErrUnverified).

// Headers of signed answers.
const (
	// HeaderSignature carries the answer's signature (a compact JWS).
	HeaderSignature = "Agentic-Signature"
	// HeaderNonce carries the client's nonce, which the signature binds
	// through RequestHash: an answer to another request does not verify.
	HeaderNonce = "Agentic-Nonce"
)

// ErrUnverified marks an answer refused because its signature does not
// hold or its signer may not give it. Nothing of such an answer reaches
// the caller.
var ErrUnverified = errors.New("answer refused")

// RequestHash binds an answer to one request: the subject it was sent on,
// the client's nonce and its body.
func RequestHash(subject, nonce string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(subject))
	h.Write([]byte{0})
	h.Write([]byte(nonce))
	h.Write([]byte{0})
	h.Write(body)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// BodyHash is the hash of an answer's bytes the signature names.
func BodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// newNonce is a fresh request nonce.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Trust is how a Client judges signed answers. It is safe for concurrent
// use once made.
type Trust struct {
	// Verifier checks signatures and credentials against the roots the
	// client trusts (the root of its credentials file).
	Verifier *envelope.Verifier
	// LearnRoots: when a signer's credential does not verify (a root the
	// Verifier does not know issued it — a rotation's new root), read
	// the ledger's trust.root_added events once, each a signed event
	// verified against the roots known so far and signed by an
	// administrator, and verify again trusting the roots they added.
	LearnRoots bool
	// Revoked, when set, clears a signer's credential against the
	// revocations: nil when it is not revoked, else why the answer is
	// refused — the credential is revoked, or the revocations could not
	// be read to tell (a check that cannot be made refuses; it never
	// passes).
	Revoked func(c *trust.Credential) error
	// Now is the clock the signature's times are judged by (time.Now
	// when nil).
	Now func() time.Time
	// roots is what LearnRoots learned.
	roots atomic.Pointer[learned]
}

// learned is the verifier after learning roots (nil before).
type learned struct {
	mu   sync.Mutex
	done bool
	v    *envelope.Verifier
}

func (t *Trust) learned() *learned {
	if l := t.roots.Load(); l != nil {
		return l
	}
	t.roots.CompareAndSwap(nil, &learned{})
	return t.roots.Load()
}

// verifier is the Verifier, or the one that learned the ledger's roots.
func (t *Trust) verifier() *envelope.Verifier {
	l := t.learned()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.v != nil {
		return l.v
	}
	return t.Verifier
}

// learn reads the ledger's trust.root_added events through c, once, and
// reports whether it learned a root.
func (t *Trust) learn(ctx context.Context, c *Client) bool {
	l := t.learned()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return false
	}
	l.done = true
	ring := keyring{}
	plain := *c
	plain.trust = nil
	for line, err := range plain.AuditLines(ctx, AuditRequest{Types: []string{string(event.RootAdded)}}) {
		if err != nil {
			return false
		}
		v := t.Verifier.WithKeyring(ring)
		env, err := v.Verify([]byte(line.JWS), event.Subject(event.RootAdded, ""), line.StreamTime)
		if err != nil || !env.Signer.HasRole(event.RoleAdmin) || len(env.Events) != 1 {
			continue
		}
		if d, key, ok := trust.DecodeRootAdded(env.Events[0].Data); ok {
			ring[d.KeyID] = key
		}
	}
	if len(ring) == 0 {
		return false
	}
	l.v = t.Verifier.WithKeyring(ring)
	return true
}

// keyring is a set of root keys by KeyID.
type keyring map[string]ed25519.PublicKey

func (k keyring) RootKey(id string) (ed25519.PublicKey, bool) {
	key, ok := k[id]
	return key, ok
}

func (t *Trust) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// check verifies m, the answer to a request with nonce and body sent on
// subject for method, and returns the verified signer.
func (t *Trust) check(ctx context.Context, c *Client, method, subject, nonce string, body []byte, m *nats.Msg) (*trust.Credential, error) {
	node := m.Header.Get(HeaderNode)
	refuse := func(format string, args ...any) error {
		who := "a responder"
		if node != "" {
			who = fmt.Sprintf("a responder calling itself node %q", node)
		}
		return WithHint(fmt.Errorf("%w: the answer to %s from %s: %s", ErrUnverified, method, who, fmt.Sprintf(format, args...)),
			"nothing of it was shown or used. A node older than protocol version 7 answers unsigned: upgrade it; otherwise something that is not a trusted ledger or ui node answers queries (docs/security.md, \"Signed answers\")")
	}
	sig := []byte(m.Header.Get(HeaderSignature))
	r, err := t.verifier().VerifyReply(sig, t.now())
	if err != nil && len(sig) > 0 && t.LearnRoots && c != nil && t.learn(ctx, c) {
		r, err = t.verifier().VerifyReply(sig, t.now())
	}
	if err != nil {
		return nil, refuse("%v", err)
	}
	signer := r.Signer
	switch {
	case r.Method != method || r.Subject != subject:
		return nil, refuse("signed for %s on %s, asked %s on %s", r.Method, r.Subject, method, subject)
	case r.Request != RequestHash(subject, nonce, body):
		return nil, refuse("signed for another request (a replayed or redirected answer)")
	case r.Body != BodyHash(m.Data):
		return nil, refuse("the body is not the body %s signed", signer.ID)
	case node != "" && node != signer.ID:
		return nil, refuse("signed by %s", signer.ID)
	}
	if named, ok := nodeOfSubject(subject); ok && named != signer.ID {
		return nil, refuse("node %s was asked, %s signed", named, signer.ID)
	}
	if !slices.Contains(natsauth.PerNodeMethods, method) && !natsauth.Answers(signer.Roles) {
		return nil, refuse("%s (roles %s) may not answer %s: only nodes with a role of %s answer the cluster's queries",
			signer.ID, strings.Join(signer.Roles, ","), method, strings.Join(natsauth.AnswerRoles, ", "))
	}
	if t.Revoked != nil {
		if err := t.Revoked(signer); err != nil {
			return nil, refuse("the credential of %s: %v", signer.ID, err)
		}
	}
	return signer, nil
}

// nodeOfSubject is the node a per-node subject (NodeSubject) names.
func nodeOfSubject(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, SubjectPrefix+"at.")
	if !ok {
		return "", false
	}
	node, _, ok := strings.Cut(rest, ".")
	return node, ok && node != ""
}
