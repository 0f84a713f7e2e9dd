// Package envelope signs and verifies the messages that carry events on the
// bus. A message is one compact JWS (a JWT) signed with Ed25519 (alg EdDSA).
// Its header names the signer (kid) and carries the signer's credential
// (cred), so any holder of the root public key can verify it alone.
//
// Claims of a single-event message:
//
//	{"iss": node, "iat": …, "exp": …, "jti": event id, "typ": type, "run": run, "at": time, "data": {…}}
//
// A batch carries several events of one type (one subject) in one signature,
// which is where throughput under fsync-per-message comes from:
//
//	{"iss": node, "iat": …, "exp": …, "jti": envelope id, "typ": type,
//	 "batch": [{"id": event id, "run": run, "at": time, "data": {…}}, …]}
//
// Verification (Verifier.Verify) checks, in order: size, the JWS structure
// and algorithm, the credential against the root, the signature, exp/iat at
// the message's time, iss = kid = credential subject, that the subject
// matches the type, that the credential's roles allow the type, and that no
// payload carries a secret (package redact). Sign refuses the same secrets. Replays
// (a jti seen before) are the ledger's job: it keeps the persisted set.
package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/golang-jwt/jwt/v5"
)

// Limits.
const (
	// MaxMessageBytes caps a signed message (under NATS's default 1 MiB
	// max_payload).
	MaxMessageBytes = 900 << 10
	// MaxEventBytes caps one event's payload, so that any event that passes
	// CheckDraft can be signed alone: the claims are base64-encoded (4/3)
	// and the header carries the signer's credential, and the result must
	// stay under MaxMessageBytes ((900 KiB - 2 KiB) * 3/4 > 640 KiB + claims).
	MaxEventBytes = 640 << 10
	// TTL is how long after signing a message stays valid.
	TTL = 5 * time.Minute
	// Leeway tolerates clock skew between nodes.
	Leeway = 30 * time.Second
)

// ErrRejected marks every verification failure; the wrapped text is the
// reason recorded in the ledger.
var ErrRejected = errors.New("envelope: rejected")

// ErrTooLarge is returned by Sign when the events do not fit one message.
var ErrTooLarge = errors.New("envelope: message too large")

// ErrSecret is returned by Sign (and CheckDraft) for an event whose payload
// still carries what looks like a secret; receivers refuse such events too.
var ErrSecret = errors.New("envelope: event carries a secret")

// CheckDraft reports whether d may be signed: size and secrets. Emitters
// call it before they accept a draft, so a refusal reaches the caller.
func CheckDraft(d event.Draft) error {
	if len(d.Data) > MaxEventBytes {
		return fmt.Errorf("%w: event %s (%s) payload is %d bytes, limit %d", ErrTooLarge, d.ID, d.Type, len(d.Data), MaxEventBytes)
	}
	if kind, ok := redact.FindJSON(d.Data); ok {
		return fmt.Errorf("%w: %s event %s holds what looks like a secret (%s); pass secrets by reference, e.g. $NAME from the executor's environment", ErrSecret, d.Type, d.ID, kind)
	}
	return nil
}

type item struct {
	ID   string          `json:"id"`
	Run  string          `json:"run,omitempty"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data,omitempty"`
}

type claims struct {
	jwt.RegisteredClaims
	Type  event.Type      `json:"typ"`
	Run   string          `json:"run,omitempty"`
	At    time.Time       `json:"at,omitzero"`
	Data  json.RawMessage `json:"data,omitempty"`
	Batch []item          `json:"batch,omitempty"`
}

// Sign builds one signed message carrying drafts, which must all have the
// same subject. It returns the message and its jti (the event id for a single
// event, a fresh id for a batch).
func Sign(id *trust.Identity, drafts []event.Draft) ([]byte, string, error) {
	if len(drafts) == 0 {
		return nil, "", errors.New("envelope: nothing to sign")
	}
	subj := drafts[0].Subject()
	now := time.Now()
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    id.ID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(TTL)),
		},
		Type: drafts[0].Type,
	}
	for _, d := range drafts {
		if err := CheckDraft(d); err != nil {
			return nil, "", err
		}
		if d.Subject() != subj {
			return nil, "", fmt.Errorf("envelope: batch mixes subjects %s and %s", subj, d.Subject())
		}
	}
	if len(drafts) == 1 {
		d := drafts[0]
		c.ID, c.Run, c.At, c.Data = d.ID, d.Run, d.Time, d.Data
	} else {
		c.ID = event.NewID()
		c.Batch = make([]item, len(drafts))
		for i, d := range drafts {
			c.Batch[i] = item{ID: d.ID, Run: d.Run, At: d.Time, Data: d.Data}
		}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = id.ID
	tok.Header["cred"] = id.Credential
	s, err := tok.SignedString(id.Key)
	if err != nil {
		return nil, "", fmt.Errorf("envelope: sign %s: %w", c.Type, err)
	}
	if len(s) > MaxMessageBytes {
		return nil, "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(s), MaxMessageBytes)
	}
	return []byte(s), c.ID, nil
}

// Envelope is a verified message.
type Envelope struct {
	// ID is the message's jti.
	ID string
	// Signer is the verified credential of the node that signed it.
	Signer *trust.Credential
	// Type of every event it carries.
	Type event.Type
	// Events carried, in order, without ledger positions.
	Events []event.Event
}

// Verifier verifies messages against a root, caching verified credentials
// (a credential is verified once, not on every message).
type Verifier struct {
	root *trust.Root
	mu   struct {
		sync.Mutex
		creds map[string]*trust.Credential
	}
}

// NewVerifier returns a verifier trusting root.
func NewVerifier(root *trust.Root) *Verifier {
	v := &Verifier{root: root}
	v.mu.creds = make(map[string]*trust.Credential)
	return v
}

const maxCachedCreds = 4096

func (v *Verifier) credential(raw string, at time.Time) (*trust.Credential, error) {
	v.mu.Lock()
	c, ok := v.mu.creds[raw]
	v.mu.Unlock()
	if ok {
		if at.After(c.Expires.Add(Leeway)) {
			return nil, fmt.Errorf("%w: credential of %s expired at %s", trust.ErrBadCredential, c.ID, c.Expires.Format(time.RFC3339))
		}
		return c, nil
	}
	c, err := v.root.Verify(raw, at)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if len(v.mu.creds) >= maxCachedCreds {
		clear(v.mu.creds)
	}
	v.mu.creds[raw] = c
	v.mu.Unlock()
	return c, nil
}

func reject(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRejected}, args...)...)
}

// Verify checks raw, received on subject, as of time at (the message's
// stream timestamp, so that every ledger reaches the same verdict whenever
// it folds). Every error wraps ErrRejected.
func (v *Verifier) Verify(raw []byte, subject string, at time.Time) (*Envelope, error) {
	if len(raw) > MaxMessageBytes {
		return nil, reject("message is %d bytes, limit %d", len(raw), MaxMessageBytes)
	}
	var c claims
	var cred *trust.Credential
	_, err := jwt.NewParser(
		jwt.WithValidMethods([]string{"EdDSA"}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(func() time.Time { return at }),
		jwt.WithJSONNumber(),
	).ParseWithClaims(string(raw), &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		rawCred, _ := t.Header["cred"].(string)
		if kid == "" || rawCred == "" {
			return nil, errors.New("header lacks kid or cred")
		}
		cr, err := v.credential(rawCred, at)
		if err != nil {
			return nil, err
		}
		if cr.ID != kid {
			return nil, fmt.Errorf("kid %q but credential is for %q", kid, cr.ID)
		}
		cred = cr
		return cr.PublicKey, nil
	})
	if err != nil {
		return nil, reject("%v", err)
	}
	if c.Issuer != cred.ID {
		return nil, reject("iss %q but signer is %q", c.Issuer, cred.ID)
	}
	if c.ID == "" {
		return nil, reject("no jti")
	}
	if !event.Known(c.Type) {
		return nil, reject("unknown event type %q", c.Type)
	}
	if !event.Permit(c.Type, cred.Roles) {
		return nil, reject("%s with roles %v may not emit %s", cred.ID, cred.Roles, c.Type)
	}
	if got := event.TypeFromSubject(subject); got != c.Type {
		return nil, reject("type %s sent on subject %s", c.Type, subject)
	}
	if kind, ok := redact.FindJSON(c.Data); ok {
		return nil, reject("event carries what looks like a secret (%s)", kind)
	}
	for _, it := range c.Batch {
		if kind, ok := redact.FindJSON(it.Data); ok {
			return nil, reject("event %s carries what looks like a secret (%s)", it.ID, kind)
		}
	}
	env := &Envelope{ID: c.ID, Signer: cred, Type: c.Type}
	mk := func(id, run string, t time.Time, data json.RawMessage) event.Event {
		if t.IsZero() {
			t = c.IssuedAt.Time
		}
		return event.Event{ID: id, Type: c.Type, Run: run, Node: cred.ID, Time: t.UTC(), Subject: subject, Data: data}
	}
	if len(c.Batch) == 0 {
		env.Events = []event.Event{mk(c.ID, c.Run, c.At, c.Data)}
		return env, nil
	}
	if c.Run != "" || len(c.Data) > 0 {
		return nil, reject("batch message also carries a single event")
	}
	seen := make(map[string]bool, len(c.Batch))
	for _, it := range c.Batch {
		if it.ID == "" || seen[it.ID] {
			return nil, reject("batch item with empty or repeated id %q", it.ID)
		}
		seen[it.ID] = true
		env.Events = append(env.Events, mk(it.ID, it.Run, it.At, it.Data))
	}
	return env, nil
}

// Claimed is what an unverified message says about itself, for the record of
// a rejection. Nothing in it is trustworthy.
type Claimed struct {
	Signer string
	Type   string
	ID     string
}

// Peek reads the claims of raw without verifying anything.
func Peek(raw []byte) Claimed {
	var c claims
	tok, _, err := jwt.NewParser().ParseUnverified(string(raw), &c)
	if err != nil || tok == nil {
		return Claimed{}
	}
	kid, _ := tok.Header["kid"].(string)
	if kid == "" {
		kid = c.Issuer
	}
	return Claimed{Signer: kid, Type: string(c.Type), ID: c.ID}
}
