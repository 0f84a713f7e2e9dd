package envelope

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Rejection is the error Verify returns for a message it refuses. Code and
// Reason go into the ledger's event.rejected record; both are derived from
// the message's bytes, its stream time and the rules of its version only,
// so every ledger that knows the version writes the same record. Cause
// carries what went wrong underneath (a decoder's or a crypto library's
// text) for the log, never for the ledger.
type Rejection struct {
	// Code is the stable reason.
	Code event.RejectCode
	// Reason says it for people.
	Reason string
	// Claimed is what the message says about itself (zero when it cannot
	// be read); nothing in it is verified.
	Claimed Claimed
	// Version is the protocol version the message declares (0 when absent
	// or unreadable).
	Version int
	// Signer is the authenticated signer: set only when the message's
	// credential and signature verified and a later check refused it (a
	// time, the type, the subject, a secret…).
	Signer string
	// IssuedAt is the message's iat, when it has one.
	IssuedAt time.Time
	// Cause is the underlying detail, for logs.
	Cause error
}

// Error is the code, the reason and the cause.
func (r *Rejection) Error() string {
	s := "envelope: rejected: " + string(r.Code) + ": " + r.Reason
	if r.Cause != nil {
		s += " (" + r.Cause.Error() + ")"
	}
	return s
}

// Is makes every Rejection match ErrRejected.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

// Unwrap returns the cause.
func (r *Rejection) Unwrap() error { return r.Cause }

// Record is the payload of the event.rejected record for the message,
// received on subject.
func (r *Rejection) Record(subject string) event.RejectedData {
	return event.RejectedData{
		Code: r.Code, Reason: r.Reason, Subject: subject,
		Signer: r.Claimed.Signer, ClaimedType: r.Claimed.Type, ClaimedID: r.Claimed.ID,
	}
}

// AsRejection returns the Rejection in err. Verify returns nothing else;
// any other error (a bug) is reported as malformed with a fixed reason, its
// text kept as the cause.
func AsRejection(err error) *Rejection {
	var r *Rejection
	if errors.As(err, &r) {
		return r
	}
	return &Rejection{Code: event.RejectMalformed, Reason: "message could not be judged", Cause: err}
}

// ErrRejected marks every verification failure (a *Rejection).
var ErrRejected = errors.New("envelope: rejected")

// ErrTooLarge is returned by Sign when the events do not fit one message.
var ErrTooLarge = errors.New("envelope: message too large")

// ErrSecret is returned by Sign (and CheckDraft) for an event whose payload
// still carries what looks like a secret; receivers refuse such events too.
var ErrSecret = errors.New("envelope: event carries a secret")

// stamp formats a time in a reason.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Reasons. Each takes only values read from the message, its stream time
// or the rules of its version.
func reasonUnreadable() string {
	return "message is not a compact JWS with a JSON header and JSON claims"
}

func reasonTooLarge(n, limit, v int) string {
	return fmt.Sprintf("message is %d bytes, limit %d (protocol version %d)", n, limit, v)
}

func reasonAlgorithm(alg, want string) string {
	return fmt.Sprintf("signature algorithm %q is not allowed (want %s)", alg, want)
}

func reasonSignature(kid string) string {
	return fmt.Sprintf("signature does not verify with the key of %q's credential", kid)
}

// ReasonUnknownSigner is the reason of an unknown_signer refusal of a
// message whose header names kid: a ledger that refuses a credential of a
// root it does not trust at the message's position says what a verifier
// that does not know the root says.
func ReasonUnknownSigner(kid string) string { return reasonUnknownSigner(kid) }

func reasonUnknownSigner(kid string) string {
	return fmt.Sprintf("the credential presented by %q was not issued by this cluster's root", kid)
}

func reasonCredentialExpired(kid string, at time.Time, leeway time.Duration) string {
	return fmt.Sprintf("the credential presented by %q had expired at stream time %s (leeway %s)", kid, stamp(at), leeway)
}

func reasonExpired(exp, at time.Time, leeway time.Duration) string {
	return fmt.Sprintf("message expired at %s, before its stream time %s (leeway %s): late, or its signer's clock is behind", stamp(exp), stamp(at), leeway)
}

func reasonNotYetValid(claim string, t, at time.Time, leeway time.Duration) string {
	return fmt.Sprintf("message %s %s, after its stream time %s (leeway %s): its signer's clock is ahead", claim, stamp(t), stamp(at), leeway)
}

func reasonRoles(signer string, roles []string, t event.Type) string {
	return fmt.Sprintf("%s with roles %v may not emit %s", signer, roles, t)
}
