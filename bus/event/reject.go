package event

// RejectCode is the stable reason a stream message, or one event in it, was
// refused: the code of an event.rejected record. Codes are append-only
// (pinned by testdata/reject_codes.golden): a code is never renamed,
// removed or given another meaning. Programs test the code; the reason text
// beside it is for people.
type RejectCode string

// Rejection codes given by the verifier (bus/envelope), in the order it
// checks.
const (
	// RejectMalformed: not a compact JWS with JSON header and claims, or a
	// required part is missing (kid, cred, exp, iat, jti, an event id) or
	// inconsistent (a batch that also carries a single event).
	RejectMalformed RejectCode = "malformed"
	// RejectTooLarge: the message exceeds the size cap of its version.
	RejectTooLarge RejectCode = "too_large"
	// RejectBadSignature: a signature algorithm the version does not allow,
	// or a signature that does not verify.
	RejectBadSignature RejectCode = "bad_signature"
	// RejectUnknownSigner: the signer's credential is not one the cluster's
	// root issued (forged, malformed, another cluster's).
	RejectUnknownSigner RejectCode = "unknown_signer"
	// RejectCredentialExpired: the credential had expired at the message's
	// stream time.
	RejectCredentialExpired RejectCode = "credential_expired"
	// RejectSignerMismatch: kid, iss and the credential's subject disagree.
	RejectSignerMismatch RejectCode = "signer_mismatch"
	// RejectExpired: the message had expired at its stream time (or its
	// signer's clock is behind by more than TTL + leeway).
	RejectExpired RejectCode = "expired"
	// RejectNotYetValid: the message was issued after its stream time by
	// more than the leeway: its signer's clock is ahead.
	RejectNotYetValid RejectCode = "not_yet_valid"
	// RejectRoleNotAllowed: the signer's roles may not emit the type (or,
	// for a type the receiver does not know, may not publish in its
	// category).
	RejectRoleNotAllowed RejectCode = "role_not_allowed"
	// RejectUnknownType: a version-0 message of a type version 0 does not
	// have (version 0 predates the rule that unknown types are kept).
	RejectUnknownType RejectCode = "unknown_type"
	// RejectWrongSubject: the subject does not match the type.
	RejectWrongSubject RejectCode = "wrong_subject"
	// RejectSecret: a payload carries what looks like a secret under the
	// secret-pattern set of the message's version.
	RejectSecret RejectCode = "secret"
)

// Rejection codes given by the ledger (ledger.Append).
const (
	// RejectReplayed: the same message (same bytes) again.
	RejectReplayed RejectCode = "replayed"
	// RejectRepublished: a message id seen before, signed again by its own
	// signer (an outbox republishing after a restart): harmless.
	RejectRepublished RejectCode = "republished"
	// RejectDuplicateEvent: an event id seen before (or empty).
	RejectDuplicateEvent RejectCode = "duplicate_event"
	// RejectDuplicateRun: a goal.submitted for a run that already has one.
	RejectDuplicateRun RejectCode = "duplicate_run"
	// RejectNoEvents: a message that carries no events.
	RejectNoEvents RejectCode = "no_events"
	// RejectBadPayload: an event payload that is not valid JSON.
	RejectBadPayload RejectCode = "bad_payload"
	// RejectRevoked: the signer's credential was revoked (a
	// credential.revoked event the ledger folded earlier in the stream
	// names its kind and id, and it was issued at or before the
	// revocation's Before). Protocol version 4.
	RejectRevoked RejectCode = "credential_revoked"
	// RejectRootRetired: the root that issued the signer's credential was
	// retired (a trust.root_retired event the ledger folded earlier in
	// the stream names it). Protocol version 5.
	RejectRootRetired RejectCode = "root_retired"
)

// rejectCodes is every code, in the order they were introduced.
var rejectCodes = []RejectCode{
	RejectMalformed, RejectTooLarge, RejectBadSignature, RejectUnknownSigner,
	RejectCredentialExpired, RejectSignerMismatch, RejectExpired,
	RejectNotYetValid, RejectRoleNotAllowed, RejectUnknownType,
	RejectWrongSubject, RejectSecret,
	RejectReplayed, RejectRepublished, RejectDuplicateEvent,
	RejectDuplicateRun, RejectNoEvents, RejectBadPayload,
	RejectRevoked, RejectRootRetired,
}

// RejectCodes returns every rejection code, in the order they were
// introduced (a copy).
func RejectCodes() []RejectCode { return append([]RejectCode(nil), rejectCodes...) }

// Valid reports whether c is a code of this version.
func (c RejectCode) Valid() bool {
	for _, k := range rejectCodes {
		if k == c {
			return true
		}
	}
	return false
}
