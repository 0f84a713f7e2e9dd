// Package envelope signs and verifies the messages that carry events on the
// bus. A message is one compact JWS (a JWT) signed with Ed25519 (alg EdDSA).
// Its header names the signer (kid) and carries the signer's credential
// (cred), so any holder of the root public key can verify it alone.
//
// Claims of a single-event message:
//
//	{"iss": node, "iat": …, "exp": …, "jti": event id, "pv": 1, "typ": type, "run": run, "at": time, "data": {…}}
//
// A batch carries several events of one type (one subject) in one signature,
// which is where throughput under fsync-per-message comes from:
//
//	{"iss": node, "iat": …, "exp": …, "jti": envelope id, "pv": 1, "typ": type,
//	 "batch": [{"id": event id, "run": run, "at": time, "data": {…}}, …]}
//
// "pv" is the protocol version the message was made under (absent: 0).
// The acceptance rules of each version — algorithm, size caps, TTL and
// leeway, the role table, the secret-pattern set, what becomes of unknown
// types — live in one place, this package's rules table (Rules,
// Versions), and a message is judged by the rules of the version it
// declares, so history written under older rules keeps verifying and nodes
// of adjacent versions reach the same verdicts (docs/protocol.md).
//
// Invariants:
//
//  1. A released version's rules never change; a change is a new version.
//  2. A verdict depends only on the message's bytes, its stream time, the
//     root and the rules of its version: a refusal is a *Rejection whose
//     code and reason are made from those alone (never a library's text).
//  3. A type the rules do not know is kept (from version 1) when the
//     signer's roles may publish in its category.
//
// Replays (a jti seen before) are the ledger's job: it keeps the persisted
// set.
package envelope

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/bus/trust"
)

// CheckDraft reports whether d may be signed under the current rules: size
// and secrets. Emitters call it before they accept a draft, so a refusal
// reaches the caller. Secrets are judged by the newest secret-pattern set
// and the secret values this process knows (redact.Scan), stricter than
// any receiver; the error names the rule and the field, never the secret.
func CheckDraft(d event.Draft) error {
	r := versions[Version]
	if err := checkSize(r, d); err != nil {
		return err
	}
	// redact.Scan judges by the Latest set and the known values: when the
	// current rules' set is Latest, its verdict (and first finding) is
	// the set's own and more, so the payload is scanned once.
	if r.Secrets != redact.Latest {
		if f, ok := r.Secrets.Scan(d.Data); ok {
			return secretError(d, f)
		}
	}
	if f, ok := redact.Scan(d.Data); ok {
		return secretError(d, f)
	}
	return nil
}

// RedactDraft returns d with every secret in its payload replaced by
// [REDACTED:<rule>] (redact.RedactJSON): how events are redacted when they
// are created, before CheckDraft and signing.
func RedactDraft(d event.Draft) (event.Draft, error) {
	data, changed, err := redact.RedactJSON(d.Data)
	if err != nil {
		return d, fmt.Errorf("envelope: redact %s event %s: %w", d.Type, d.ID, err)
	}
	if changed {
		d.Data = data
	}
	return d, nil
}

// RedactCheckDraft is RedactDraft then CheckDraft — the draft as
// redacted, or the first error of the two — in one pass over the payload
// when that pass redacts nothing and proves that CheckDraft's scan would
// find nothing (redact.RedactJSONClean): how an emitter accepts a draft.
func RedactCheckDraft(d event.Draft) (event.Draft, error) {
	data, changed, clean, err := redact.RedactJSONClean(d.Data)
	if err != nil {
		return d, fmt.Errorf("envelope: redact %s event %s: %w", d.Type, d.ID, err)
	}
	if changed {
		d.Data = data
	}
	r := versions[Version]
	if clean && r.Secrets == redact.Latest {
		// CheckDraft's scan is redact.Scan alone, and would find nothing.
		return d, checkSize(r, d)
	}
	return d, CheckDraft(d)
}

func secretError(d event.Draft, f redact.Finding) error {
	where := "payload"
	if f.Path != "" {
		where = "field " + f.Path
	}
	return fmt.Errorf("%w: %s event %s: %s holds what looks like a secret (%s), secret rule %s; pass secrets by reference, e.g. $NAME from the executor's environment", ErrSecret, d.Type, d.ID, where, f.Kind, f.Rule)
}

func checkDraft(r Rules, d event.Draft) error {
	if err := checkSize(r, d); err != nil {
		return err
	}
	if f, ok := r.Secrets.Scan(d.Data); ok {
		return secretError(d, f)
	}
	return nil
}

func checkSize(r Rules, d event.Draft) error {
	if len(d.Data) > r.MaxEventBytes {
		return fmt.Errorf("%w: event %s (%s) payload is %d bytes, limit %d", ErrTooLarge, d.ID, d.Type, len(d.Data), r.MaxEventBytes)
	}
	return nil
}

// Sign builds one signed message carrying drafts, which must all have the
// same subject, under the current protocol version. It returns the message
// and its jti (the event id for a single event, a fresh id for a batch).
// It refuses a draft that CheckDraft refuses.
func Sign(id *trust.Identity, drafts []event.Draft) ([]byte, string, error) {
	for _, d := range drafts {
		if err := CheckDraft(d); err != nil {
			return nil, "", err
		}
	}
	return SignAt(id, drafts, time.Now(), Version)
}

// SignAt is Sign as a node whose clock reads now, declaring protocol
// version version: tests use it to play a node with a skewed clock, or one
// of an older (0: no "pv" claim) or newer version. A version newer than
// this build knows is signed under the newest rules it knows.
func SignAt(id *trust.Identity, drafts []event.Draft, now time.Time, version int) ([]byte, string, error) {
	return signAt(id, drafts, now, version, true)
}

// SignChecked is SignAt under the current protocol version for drafts
// that CheckDraft accepted in this process (an outbox signing what its
// Emit checked): the payloads are not scanned for secrets again —
// CheckDraft's scan is the stricter — while size and subjects are
// checked as by SignAt.
func SignChecked(id *trust.Identity, drafts []event.Draft, now time.Time) ([]byte, string, error) {
	return signAt(id, drafts, now, Version, false)
}

func signAt(id *trust.Identity, drafts []event.Draft, now time.Time, version int, scan bool) ([]byte, string, error) {
	if len(drafts) == 0 {
		return nil, "", errors.New("envelope: nothing to sign")
	}
	if version < 0 {
		return nil, "", fmt.Errorf("envelope: protocol version %d", version)
	}
	r := judging(versions, version)
	subj := drafts[0].Subject()
	c := claims{
		Issuer:    id.ID,
		IssuedAt:  newDate(now),
		ExpiresAt: newDate(now.Add(r.TTL)),
		Version:   version,
		Type:      drafts[0].Type,
	}
	for _, d := range drafts {
		check := checkDraft
		if !scan {
			check = checkSize
		}
		if err := check(r, d); err != nil {
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
	raw, err := encode(header{Alg: r.Algorithm, Typ: "JWT", Kid: id.ID, Cred: id.Credential}, c, id.Key)
	if err != nil {
		return nil, "", fmt.Errorf("envelope: sign %s: %w", c.Type, err)
	}
	if len(raw) > r.MaxMessageBytes {
		return nil, "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(raw), r.MaxMessageBytes)
	}
	// A verifier of this process need not check the signature again.
	if pub, ok := id.Key.Public().(ed25519.PublicKey); ok {
		seen.remember(raw, nil, pub)
	}
	return raw, c.ID, nil
}

// Envelope is a verified message.
type Envelope struct {
	// ID is the message's jti.
	ID string
	// Signer is the verified credential of the node that signed it.
	Signer *trust.Credential
	// Type of every event it carries.
	Type event.Type
	// Version is the protocol version the message declares.
	Version int
	// Known is false for a type the rules it was judged by do not have: the
	// events are kept in the ledger and skipped by folds.
	Known bool
	// IssuedAt is when its signer signed it, by the signer's clock.
	IssuedAt time.Time
	// Events carried, in order, without ledger positions.
	Events []event.Event
}

// Verifier verifies messages against a root by a rules table, caching
// verified credentials (a credential is verified once, not on every
// message).
type Verifier struct {
	root  *trust.Root
	rules []Rules
	mu    struct {
		sync.Mutex
		creds map[string]*trust.Credential
		// ledger, when set, is the keyring of the roots a ledger trusts
		// (UseLedgerRoots).
		ledger trust.Keyring
	}
}

// Option configures a Verifier.
type Option func(*Verifier)

// WithRules makes the verifier judge by table (versions 0..n in order)
// instead of this build's rules: tests use it to play a node of an older
// version (a prefix of Versions) or a newer one (Versions plus rows). It
// panics on a table that is not in order: a table is code, not input.
func WithRules(table []Rules) Option {
	checkTable(table)
	return func(v *Verifier) { v.rules = table }
}

// NewVerifier returns a verifier trusting root.
func NewVerifier(root *trust.Root, opts ...Option) *Verifier {
	v := &Verifier{root: root, rules: versions}
	for _, o := range opts {
		o(v)
	}
	v.mu.creds = make(map[string]*trust.Credential)
	return v
}

const maxCachedCreds = 4096

// UseLedgerRoots makes v verify credentials issued by the genesis root
// (v's root's Genesis) or by a root keys holds — the roots a ledger's
// trust.root_added events added, retired ones included — instead of the
// roots v's root trusts locally (roots.pub). The ledger folding the
// stream sets it (ledger/follow), so that every ledger node judges
// credentials by the same roots whatever its local files say; whether a
// root was trusted at a message's stream position is the ledger's check
// (Store.Append), not v's.
func (v *Verifier) UseLedgerRoots(keys trust.Keyring) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.mu.ledger = keys
	clear(v.mu.creds)
}

// WithKeyring returns a verifier of v's rules that verifies credentials
// issued by the genesis root or by a root keys holds, with a cache of its
// own: how a ledger re-verifies its history with the roots in force at
// each position (Store.Verify).
func (v *Verifier) WithKeyring(keys trust.Keyring) *Verifier {
	n := &Verifier{root: v.root, rules: v.rules}
	n.mu.creds = make(map[string]*trust.Credential)
	n.mu.ledger = keys
	return n
}

// Genesis is the cluster's genesis root (the verifier's root's Genesis).
func (v *Verifier) Genesis() *trust.Root { return trust.PublicRoot(v.root.Genesis()) }

// genesisAnd is a keyring of the genesis root and keys.
type genesisAnd struct {
	genesis *trust.Root
	keys    trust.Keyring
}

func (g genesisAnd) RootKey(id string) (ed25519.PublicKey, bool) {
	if id == g.genesis.KeyID() {
		return g.genesis.Public, true
	}
	return g.keys.RootKey(id)
}

// credential verifies a credential as of at, or says why not.
func (v *Verifier) credential(raw string, at time.Time, leeway time.Duration) (*trust.Credential, error) {
	v.mu.Lock()
	c, ok := v.mu.creds[raw]
	keys := v.mu.ledger
	v.mu.Unlock()
	if ok {
		// The same test as the credential's first verification.
		if !at.Before(c.Expires.Add(leeway)) {
			return nil, fmt.Errorf("%w: %w: credential of %s expired at %s", trust.ErrBadCredential, trust.ErrExpired, c.ID, c.Expires.Format(time.RFC3339))
		}
		return c, nil
	}
	var err error
	if keys != nil {
		c, err = trust.VerifyWith(genesisAnd{v.Genesis(), keys}, raw, at, leeway)
	} else {
		c, err = v.root.VerifyWithin(raw, at, leeway)
	}
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

// Verify checks raw, received on subject, as of time at (the message's
// stream timestamp, so that every ledger reaches the same verdict whenever
// it folds), by the rules of the protocol version it declares. Every error
// is a *Rejection (and matches ErrRejected). The checks, in this order
// (the first failing one gives the code):
//
//  1. raw is a compact JWS with JSON header and claims, and pv is not
//     negative (malformed);
//  2. the size cap of its version (too_large);
//  3. the algorithm of its version (bad_signature);
//  4. the header names the signer (kid) and carries its credential
//     (malformed);
//  5. the credential was issued by a root the verifier knows — its iss
//     names the genesis root, or one the ledger added (UseLedgerRoots) or
//     the verifier's root trusts — (unknown_signer) and had not expired
//     at stream time, with the leeway (credential_expired);
//  6. kid is the credential's subject (signer_mismatch);
//  7. the signature (bad_signature);
//  8. exp and iat are present (malformed); exp + leeway is after the stream
//     time (expired); iat and nbf - leeway are not after it
//     (not_yet_valid);
//  9. iss is the signer (signer_mismatch); jti is present (malformed);
//  10. the signer's roles may emit the type — or, for a type its version's
//     table lacks, when unknown types are kept, may publish in the type's
//     category (role_not_allowed; unknown_type where they are not kept);
//  11. the subject matches the type (wrong_subject);
//  12. no payload holds a secret by the version's pattern set (secret);
//  13. a batch carries no single event and no empty or repeated id
//     (malformed).
//
// A message declaring a version newer than the verifier knows is judged by
// the newest rules it knows, keeping unknown types. Replays (a jti seen
// before) are the ledger's job: it keeps the persisted set.
func (v *Verifier) Verify(raw []byte, subject string, at time.Time) (*Envelope, error) {
	env, rej := v.verify(raw, subject, at)
	if rej != nil {
		return nil, rej
	}
	return env, nil
}

func (v *Verifier) verify(raw []byte, subject string, at time.Time) (*Envelope, *Rejection) {
	// A message this process signed or verified before (seen) parses as
	// it did and its signature verifies with the key it was made or
	// verified with: parse and ed25519.Verify are functions of the bytes
	// and the key alone. Every other check runs again.
	j, signedBy := seen.lookup(raw)
	parsed := j != nil
	if !parsed {
		var err error
		if j, err = parse(raw); err != nil {
			return nil, &Rejection{Code: event.RejectMalformed, Reason: reasonUnreadable(), Cause: err}
		}
	}
	c := &j.claims
	rej := func(code event.RejectCode, reason string, cause error) *Rejection {
		return &Rejection{Code: code, Reason: reason, Cause: cause, Claimed: claimed(j), Version: max(c.Version, 0), IssuedAt: c.IssuedAt.time()}
	}
	if c.Version < 0 {
		return nil, rej(event.RejectMalformed, fmt.Sprintf("pv %d is not a protocol version", c.Version), nil)
	}
	r := judging(v.rules, c.Version)
	if len(raw) > r.MaxMessageBytes {
		return nil, rej(event.RejectTooLarge, reasonTooLarge(len(raw), r.MaxMessageBytes, c.Version), nil)
	}
	if j.header.Alg != r.Algorithm {
		return nil, rej(event.RejectBadSignature, reasonAlgorithm(j.header.Alg, r.Algorithm), nil)
	}
	kid := j.header.Kid
	if kid == "" || j.header.Cred == "" {
		return nil, rej(event.RejectMalformed, "header lacks kid or cred", nil)
	}
	cred, err := v.credential(j.header.Cred, at, r.Leeway)
	switch {
	case errors.Is(err, trust.ErrExpired):
		return nil, rej(event.RejectCredentialExpired, reasonCredentialExpired(kid, at, r.Leeway), err)
	case err != nil:
		return nil, rej(event.RejectUnknownSigner, reasonUnknownSigner(kid), err)
	case cred.ID != kid:
		return nil, rej(event.RejectSignerMismatch, fmt.Sprintf("kid %q but the credential is for %q", kid, cred.ID), nil)
	case len(cred.PublicKey) != ed25519.PublicKeySize:
		return nil, rej(event.RejectBadSignature, reasonSignature(kid), nil)
	case !bytes.Equal(signedBy, cred.PublicKey) && !ed25519.Verify(cred.PublicKey, j.signing, j.sig):
		return nil, rej(event.RejectBadSignature, reasonSignature(kid), nil)
	}
	if !parsed || !bytes.Equal(signedBy, cred.PublicKey) {
		seen.remember(raw, j, cred.PublicKey)
	}
	// The signer is authenticated from here on.
	authed := func(code event.RejectCode, reason string) *Rejection {
		x := rej(code, reason, nil)
		x.Signer = cred.ID
		return x
	}
	if x := checkTimes(c, at, r.Leeway); x != nil {
		return nil, authed(x.Code, x.Reason)
	}
	if c.Issuer != cred.ID {
		return nil, authed(event.RejectSignerMismatch, fmt.Sprintf("iss %q but the signer is %q", c.Issuer, cred.ID))
	}
	if c.ID == "" {
		return nil, authed(event.RejectMalformed, "no jti")
	}
	spec, known := event.Lookup(r.Types, c.Type)
	switch {
	case known && !spec.Permits(cred.Roles):
		return nil, authed(event.RejectRoleNotAllowed, reasonRoles(cred.ID, cred.Roles, c.Type))
	case !known && !r.KeepUnknown:
		return nil, authed(event.RejectUnknownType, fmt.Sprintf("%q is not a type of protocol version %d", c.Type, r.Version))
	case !known && !event.MayPublish(r.Types, c.Type.Category(), cred.Roles):
		return nil, authed(event.RejectRoleNotAllowed, reasonRoles(cred.ID, cred.Roles, c.Type))
	}
	if got := event.TypeFromSubject(subject); got != c.Type {
		return nil, authed(event.RejectWrongSubject, fmt.Sprintf("type %q sent on subject %q", c.Type, subject))
	}
	if kind, ok := r.Secrets.FindJSON(c.Data); ok {
		return nil, authed(event.RejectSecret, fmt.Sprintf("event %s carries what looks like a secret (%s)", c.ID, kind))
	}
	for _, it := range c.Batch {
		if kind, ok := r.Secrets.FindJSON(it.Data); ok {
			return nil, authed(event.RejectSecret, fmt.Sprintf("event %s carries what looks like a secret (%s)", it.ID, kind))
		}
	}
	env := &Envelope{ID: c.ID, Signer: cred, Type: c.Type, Version: c.Version, Known: known, IssuedAt: c.IssuedAt.time()}
	// The payloads are copied out of j, which the verifier may keep: a
	// caller may write to its events' Data.
	own := make([]byte, 0, payloadBytes(c))
	mk := func(id, run string, t time.Time, data json.RawMessage) event.Event {
		if t.IsZero() {
			t = env.IssuedAt
		}
		if data != nil {
			n := len(own)
			own = append(own, data...)
			data = own[n:len(own):len(own)]
		}
		return event.Event{ID: id, Type: c.Type, Run: run, Node: cred.ID, Time: t.UTC(), Subject: subject, Data: data}
	}
	if len(c.Batch) == 0 {
		env.Events = []event.Event{mk(c.ID, c.Run, c.At, c.Data)}
		return env, nil
	}
	if c.Run != "" || len(c.Data) > 0 {
		return nil, authed(event.RejectMalformed, "batch message also carries a single event")
	}
	seen := make(map[string]bool, len(c.Batch))
	for _, it := range c.Batch {
		if it.ID == "" || seen[it.ID] {
			return nil, authed(event.RejectMalformed, fmt.Sprintf("batch item with empty or repeated id %q", it.ID))
		}
		seen[it.ID] = true
		env.Events = append(env.Events, mk(it.ID, it.Run, it.At, it.Data))
	}
	return env, nil
}

// checkTimes judges exp, iat and nbf at stream time at with leeway.
func checkTimes(c *claims, at time.Time, leeway time.Duration) *Rejection {
	switch {
	case c.ExpiresAt == nil:
		return &Rejection{Code: event.RejectMalformed, Reason: "no exp"}
	case c.IssuedAt == nil:
		return &Rejection{Code: event.RejectMalformed, Reason: "no iat"}
	case !at.Before(c.ExpiresAt.Add(leeway)):
		return &Rejection{Code: event.RejectExpired, Reason: reasonExpired(c.ExpiresAt.Time, at, leeway)}
	case at.Before(c.IssuedAt.Add(-leeway)):
		return &Rejection{Code: event.RejectNotYetValid, Reason: reasonNotYetValid("issued at", c.IssuedAt.Time, at, leeway)}
	case c.NotBefore != nil && at.Before(c.NotBefore.Add(-leeway)):
		return &Rejection{Code: event.RejectNotYetValid, Reason: reasonNotYetValid("not valid before", c.NotBefore.Time, at, leeway)}
	}
	return nil
}

// Claimed is what an unverified message says about itself, for the record of
// a rejection. Nothing in it is trustworthy.
type Claimed struct {
	Signer string
	Type   string
	ID     string
}

func claimed(j *jws) Claimed {
	kid := j.header.Kid
	if kid == "" {
		kid = j.claims.Issuer
	}
	return Claimed{Signer: kid, Type: string(j.claims.Type), ID: j.claims.ID}
}

// Peek reads the claims of raw without verifying anything.
func Peek(raw []byte) Claimed {
	j, err := parse(raw)
	if err != nil {
		return Claimed{}
	}
	return claimed(j)
}

// PeekCredential returns the credential JWT the header of raw carries
// ("" if none can be read), verifying nothing. Only the header is read, so
// the start of a message is enough: what a ledger keeps of a refused one.
func PeekCredential(raw []byte) string {
	first := bytes.IndexByte(raw, '.')
	if first < 0 {
		return ""
	}
	hb, err := b64.AppendDecode(nil, raw[:first])
	if err != nil {
		return ""
	}
	var h header
	if json.Unmarshal(hb, &h) != nil {
		return ""
	}
	return h.Cred
}
