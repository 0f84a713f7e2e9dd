package envelope

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// Signed query answers (protocol version 7). A node's answer to a query
// travels as the plain JSON the client reads, beside a small signature: a
// compact JWS of type ReplyType whose claims name the method, the subject
// the request came on, a hash of the request (its body and the client's
// nonce) and a hash of the answer's bytes. The answer is not inside the
// JWS, so it keeps its size (a page cut under NATS's max payload stays
// under it) and the signature stays small whatever the answer:
//
//	{"iss": node, "iat": …, "exp": …, "jti": id, "pv": 7, "typ": "api.reply",
//	 "data": {"method": "gates.list", "subject": "agentic.api.gates.list",
//	          "request": "sha256:…", "body": "sha256:…"}}
//
// A reply is never a ledger event: no ledger accepts its type, and
// VerifyReply accepts nothing else.

// ReplyType is the typ of a signed query answer.
const ReplyType event.Type = "api.reply"

// ReplyVersion is the first protocol version with signed answers.
const ReplyVersion = 7

// ReplyTTL is how long a signed answer stays valid after it was signed:
// long enough for a slow answer to reach its client, short enough that an
// old answer cannot pass for a new one (the request hash binds it to one
// request anyway).
const ReplyTTL = 2 * time.Minute

// ReplyClaims are what a signed answer vouches for.
type ReplyClaims struct {
	// Method is the query method answered (e.g. "gates.list").
	Method string `json:"method"`
	// Subject is the NATS subject the request came on: the queue group's,
	// one node's (at.<node>.) or the broadcast one (all.).
	Subject string `json:"subject"`
	// Request is RequestHash of the request's subject, nonce and body.
	Request string `json:"request"`
	// Body is BodyHash of the answer's bytes.
	Body string `json:"body"`
}

// Reply is a verified signed answer.
type Reply struct {
	ReplyClaims
	// Signer is the verified credential of the node that answered.
	Signer *trust.Credential
	// IssuedAt is when the node signed it, by its clock.
	IssuedAt time.Time
}

// ErrBadReply marks an answer whose signature does not hold: the answer
// must not be shown or acted on.
var ErrBadReply = errors.New("answer not signed by a node the cluster trusts")

// SignReply signs rc as id at now: the value of the answer's signature
// header.
func SignReply(id *trust.Identity, rc ReplyClaims, now time.Time) ([]byte, error) {
	data, err := json.Marshal(rc)
	if err != nil {
		return nil, fmt.Errorf("envelope: sign reply: %w", err)
	}
	c := claims{
		Issuer:    id.ID,
		IssuedAt:  newDate(now),
		ExpiresAt: newDate(now.Add(ReplyTTL)),
		ID:        event.NewID(),
		Version:   Version,
		Type:      ReplyType,
		Data:      data,
	}
	raw, err := encode(header{Alg: Algorithm, Typ: "JWT", Kid: id.ID, Cred: id.Credential}, c, id.Key)
	if err != nil {
		return nil, fmt.Errorf("envelope: sign reply: %w", err)
	}
	return raw, nil
}

// maxReplySig caps a signature header: claims of four short strings and a
// credential.
const maxReplySig = 16 << 10

// VerifyReply checks the signature of an answer as of at (the client's
// clock): a compact JWS of type ReplyType, version ReplyVersion or later,
// signed by a node whose credential a root v trusts issued and had not
// expired, with iat and exp around at within the leeway. What the answer
// may say — which roles may answer which method, that the request and
// body hashes match — is the caller's to check on the claims returned.
// Every error wraps ErrBadReply.
func (v *Verifier) VerifyReply(raw []byte, at time.Time) (*Reply, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadReply, fmt.Sprintf(format, args...))
	}
	if len(raw) == 0 {
		return nil, bad("the answer carries no signature (a node older than protocol version %d, or not a node at all)", ReplyVersion)
	}
	if len(raw) > maxReplySig {
		return nil, bad("signature of %d bytes, limit %d", len(raw), maxReplySig)
	}
	j, err := parse(raw)
	if err != nil {
		return nil, bad("unreadable signature")
	}
	c := &j.claims
	switch {
	case j.header.Alg != Algorithm:
		return nil, bad("algorithm %q, want %s", j.header.Alg, Algorithm)
	case j.header.Kid == "" || j.header.Cred == "":
		return nil, bad("the signature names no signer")
	case c.Type != ReplyType:
		return nil, bad("a %q message is not an answer", c.Type)
	case c.Version < ReplyVersion:
		return nil, bad("protocol version %d has no signed answers", c.Version)
	}
	cred, err := v.credential(j.header.Cred, at, Leeway)
	switch {
	case err != nil:
		return nil, bad("signer %s: %v", j.header.Kid, err)
	case cred.ID != j.header.Kid || c.Issuer != cred.ID:
		return nil, bad("kid %q, iss %q, but the credential is of %q", j.header.Kid, c.Issuer, cred.ID)
	case cred.Kind != trust.KindNode:
		return nil, bad("%s is an %s, not a node: only nodes answer queries", cred.ID, cred.Kind)
	case len(cred.PublicKey) != ed25519.PublicKeySize || !ed25519.Verify(cred.PublicKey, j.signing, j.sig):
		return nil, bad("the signature of %s does not verify", cred.ID)
	}
	if x := checkTimes(c, at, Leeway); x != nil {
		return nil, bad("%s", x.Reason)
	}
	var rc ReplyClaims
	if err := json.Unmarshal(c.Data, &rc); err != nil || rc.Method == "" || rc.Subject == "" || rc.Request == "" || rc.Body == "" {
		return nil, bad("the signature's claims lack method, subject, request or body")
	}
	return &Reply{ReplyClaims: rc, Signer: cred, IssuedAt: c.IssuedAt.time()}, nil
}
