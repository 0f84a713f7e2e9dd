package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// Credential revocation (protocol version 4). An accepted
// credential.revoked record revokes the credentials of its Kind and ID
// issued at or before its Before: from the next stream message on, Append
// refuses every message such a credential signs (code
// credential_revoked), while the records before it stay. The revocations
// in force are a function of the ledger's credential.revoked records alone
// (Append refuses one whose payload does not say what it revokes), read
// through the type index when the store opens or an Import ends, so every
// ledger node folding the same stream refuses the same messages, a
// restart or an imported copy included.

// credIdentity names whose credentials a revocation covers.
type credIdentity struct{ kind, id string }

// revocation is what is in force for one identity: credentials issued at
// or before before are refused. stream is the stream seq of the
// credential.revoked that set before (the latest of them wins only when it
// revokes more).
type revocation struct {
	before time.Time
	stream uint64
}

// revocations are the revocations in force, by identity.
type revocations map[credIdentity]revocation

// apply adds the revocation d, folded at stream seq stream.
func (r revocations) apply(d event.CredentialRevokedData, stream uint64) {
	k := credIdentity{d.Kind, d.ID}
	if cur, ok := r[k]; ok && !d.Before.After(cur.before) {
		return
	}
	r[k] = revocation{before: d.Before.UTC(), stream: stream}
}

// reasonBadRevocation is the reason of a credential.revoked refused for
// its payload.
const reasonBadRevocation = "credential.revoked payload must name a kind (node or operator), an id and a time (before)"

// decodeRevocation reads a credential.revoked payload, or says it is not
// one a ledger applies.
func decodeRevocation(data []byte) (event.CredentialRevokedData, bool) {
	var d event.CredentialRevokedData
	if json.Unmarshal(data, &d) != nil || d.ID == "" || d.Before.IsZero() ||
		(d.Kind != trust.KindNode && d.Kind != trust.KindOperator) {
		return d, false
	}
	return d, true
}

// loadRevocations reads the revocations in force from the ledger's
// credential.revoked records (the type index).
func (s *Store) loadRevocations() error {
	revs := revocations{}
	for rec, err := range s.ScanType(event.CredentialRevoked, 1) {
		if err != nil {
			return fmt.Errorf("ledger: read revocations: %w", err)
		}
		d, ok := decodeRevocation(rec.Event.Data)
		if !ok {
			// Append never accepts one; an older build's ledger may.
			s.log.Warn("credential.revoked record without a valid payload ignored", "seq", rec.Event.Seq)
			continue
		}
		revs.apply(d, rec.Event.StreamSeq)
	}
	s.revoked = revs
	s.revokedNow.Store(&revs)
	return nil
}

// currentRevocations are the revocations in force as committed, read
// without appendMu (empty before the store loaded them).
func (s *Store) currentRevocations() revocations {
	if p := s.revokedNow.Load(); p != nil {
		return *p
	}
	return nil
}

// covering returns the revocation in r that revokes c: one for c's kind
// and id whose before is not earlier than c's issue time.
func (r revocations) covering(c *trust.Credential) (revocation, bool) {
	rev, ok := r[credIdentity{c.Kind, c.ID}]
	if !ok || c.Issued.After(rev.before) {
		return revocation{}, false
	}
	return rev, true
}

// revokedReason says why c is refused under rev (credential_revoked).
func revokedReason(c *trust.Credential, rev revocation) string {
	return fmt.Sprintf("the credential of %s %q issued at %s is revoked (credentials issued up to %s, revoked at stream seq %d)",
		c.Kind, c.ID, stamp(c.Issued), stamp(rev.before), rev.stream)
}

// ErrCredentialRevoked marks a credential that a credential.revoked the
// ledger holds revokes (CheckCredential).
var ErrCredentialRevoked = errors.New("ledger: credential revoked")

// ErrRootRetired marks a credential whose issuing root a
// trust.root_retired the ledger holds retired (CheckCredential).
var ErrRootRetired = errors.New("ledger: credential's root retired")

// CheckCredential says whether the ledger, as committed now, refuses
// what c presents: an error matching ErrCredentialRevoked when a
// credential.revoked revokes it (what Append refuses a message's signer
// for, code credential_revoked), or ErrRootRetired when the root that
// issued it was retired (code root_retired); nil otherwise. It is the one
// check of a credential shown outside the stream — an HTTP API token, a
// ui request — so that a revocation holds there as it does for events.
// It reads no disk and takes no lock an Append holds: safe on every
// request.
func (s *Store) CheckCredential(c *trust.Credential) error {
	if rev, ok := s.currentRevocations().covering(c); ok {
		return fmt.Errorf("%w: %s", ErrCredentialRevoked, revokedReason(c, rev))
	}
	if e, ok := s.currentRoots()[c.Issuer]; ok && e.retired != 0 {
		return fmt.Errorf("%w: the credential of %s %q was issued by root %s, retired at stream seq %d", ErrRootRetired, c.Kind, c.ID, c.Issuer, e.retired)
	}
	return nil
}

// revokedSigner returns the refusal of m when its signer's credential is
// revoked by what the ledger holds or this Append staged, or nil.
func (a *appender) revokedSigner(m *Message) *event.RejectedData {
	c := a.signerOf(m)
	if c == nil {
		return nil
	}
	revs := a.s.revoked
	if _, staged := a.revoked[credIdentity{c.Kind, c.ID}]; staged {
		revs = a.revoked // what this Append staged includes what it had
	}
	r, ok := revs.covering(c)
	if !ok {
		return nil
	}
	first := m.Events[0]
	return &event.RejectedData{
		Code: event.RejectRevoked, Reason: revokedReason(c, r),
		Subject: m.Subject, Signer: first.Node, ClaimedType: string(first.Type), ClaimedID: m.EnvelopeID,
	}
}

// revoke stages the revocation an accepted credential.revoked carries: it
// applies from the next message on.
func (a *appender) revoke(ev event.Event, stream uint64) {
	d, ok := decodeRevocation(ev.Data)
	if !ok {
		return // refused before it was appended
	}
	if a.revoked == nil {
		a.revoked = revocations{}
	}
	k := credIdentity{d.Kind, d.ID}
	if _, staged := a.revoked[k]; !staged {
		if cur, ok := a.s.revoked[k]; ok {
			a.revoked[k] = cur
		}
	}
	a.revoked.apply(d, stream)
}

// revocationsCommitted moves what an Append staged into the store's
// revocations once it committed.
func (a *appender) revocationsCommitted() {
	if len(a.revoked) == 0 {
		return
	}
	// A new map: readers of revokedNow hold the old one.
	next := maps.Clone(a.s.revoked)
	if next == nil {
		next = revocations{}
	}
	maps.Copy(next, a.revoked)
	a.s.revoked = next
	a.s.revokedNow.Store(&next)
}

// stamp formats a time in a reason.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
