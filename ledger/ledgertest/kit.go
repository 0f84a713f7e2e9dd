package ledgertest

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
)

// Kit makes real signed messages for tests.
type Kit struct {
	// Root is a fresh trust root that can issue credentials.
	Root *trust.Root
	// Verifier trusts Root.
	Verifier *envelope.Verifier
	// Node is "n1", a node enrolled with every node role.
	Node *trust.Identity
	// Operator is "op", an operator identity (goal.submitted, run.cancel…).
	Operator *trust.Identity

	t testing.TB
}

// NewKit makes a root, a node identity and an operator identity.
func NewKit(t testing.TB) *Kit {
	t.Helper()
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatalf("ledgertest: %v", err)
	}
	k := &Kit{Root: root, Verifier: envelope.NewVerifier(root), t: t}
	k.Node = k.Identity("n1", trust.KindNode, event.NodeRoles...)
	k.Operator = k.Identity("op", trust.KindOperator, event.RoleOperator)
	return k
}

// Identity enrolls id with kind and roles under the kit's root, valid for an
// hour.
func (k *Kit) Identity(id, kind string, roles ...string) *trust.Identity {
	k.t.Helper()
	ident, err := trust.NewIdentity(k.Root, id, kind, roles, time.Hour)
	if err != nil {
		k.t.Fatalf("ledgertest: identity %s: %v", id, err)
	}
	return ident
}

// Sign signs drafts (one subject) as signer and returns the message and its
// subject.
func (k *Kit) Sign(signer *trust.Identity, drafts ...event.Draft) (raw []byte, subject string) {
	k.t.Helper()
	raw, _, err := envelope.Sign(signer, drafts)
	if err != nil {
		k.t.Fatalf("ledgertest: sign: %v", err)
	}
	return raw, drafts[0].Subject()
}

// Message signs drafts as signer and verifies the result at stream seq seq,
// now, into a Message carrying the verified events. It fails the test if the
// message does not verify.
func (k *Kit) Message(seq uint64, signer *trust.Identity, drafts ...event.Draft) ledger.Message {
	k.t.Helper()
	raw, subject := k.Sign(signer, drafts...)
	m := k.Receive(seq, subject, raw, time.Now())
	if m.Reject != nil {
		k.t.Fatalf("ledgertest: message does not verify: %s", m.Reject.Reason)
	}
	return m
}

// Receive is what the follower does with one stream message: verify raw,
// received on subject at stream time at, into a Message with the verified
// events, or with Reject set (reason and what the message claims) when it
// fails verification.
func (k *Kit) Receive(seq uint64, subject string, raw []byte, at time.Time) ledger.Message {
	m := ledger.Message{StreamSeq: seq, Subject: subject, Time: at, Raw: raw}
	env, err := k.Verifier.Verify(raw, subject, at)
	if err != nil {
		rej := envelope.AsRejection(err)
		rec := rej.Record(subject)
		m.EnvelopeID, m.Reject = rej.Claimed.ID, &rec
		return m
	}
	m.EnvelopeID, m.Events, m.Signer = env.ID, env.Events, env.Signer
	return m
}

// Redeliver returns m as the stream would carry it again at another
// sequence (the same signed bytes, e.g. after the duplicate window).
func Redeliver(m ledger.Message, seq uint64) ledger.Message {
	m.StreamSeq = seq
	m.Events = append([]event.Event(nil), m.Events...)
	return m
}
