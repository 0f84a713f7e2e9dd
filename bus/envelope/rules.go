package envelope

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
)

// Version is the protocol version this build signs with: the newest in
// its rules table.
const Version = 8

// Limits and times of the current rules.
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
	// Leeway is the clock skew between nodes that receivers tolerate: a
	// message is judged at its stream time, and its iat may lie up to
	// Leeway after it, its exp (and its signer's credential's) up to
	// Leeway before it. It is the one constant for skew: the rules of every
	// version use it, and the ledger follower warns when a signer's
	// measured skew passes half of it.
	Leeway = 30 * time.Second
)

// Algorithm is the JWS signature algorithm of every version so far.
const Algorithm = "EdDSA"

// Rules are the acceptance rules of one protocol version: what a message
// that declares the version must satisfy. A version's rules never change
// once released, so that a message is judged the same by every node and at
// every later time (ledger verify re-checks history by them).
type Rules struct {
	// Version is the protocol version (the message's "pv" claim; absent
	// means 0).
	Version int
	// Algorithm is the only JWS algorithm accepted.
	Algorithm string
	// MaxMessageBytes caps the signed message.
	MaxMessageBytes int
	// MaxEventBytes caps one event's payload (checked when signing).
	MaxEventBytes int
	// TTL is exp - iat as signed.
	TTL time.Duration
	// Leeway is the clock skew tolerated when judging times.
	Leeway time.Duration
	// Secrets is the secret-pattern set payloads are checked with.
	Secrets redact.Set
	// Types is the role table: which roles may emit which type
	// (event.TypesAt(Version)).
	Types []event.Spec
	// KeepUnknown says what becomes of a type missing from Types: kept
	// (accepted, then skipped by folds) when the signer's roles may publish
	// in its category; otherwise refused with unknown_type. A message that
	// declares a version newer than the receiver knows is always judged so.
	KeepUnknown bool
}

// versions is the rules table, by version. Append-only: a released row is
// never edited.
var versions = []Rules{
	// Version 0: messages without a "pv" claim, from builds before protocol
	// versions. Its type set is closed: a type outside it cannot come from
	// an honest node of that time and is refused.
	{Version: 0, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set1, Types: event.TypesAt(0)},
	// Version 1: the same limits; the message declares its version, and a
	// type the receiver does not know is kept when the signer's roles may
	// publish in its category.
	{Version: 1, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set1, Types: event.TypesAt(1), KeepUnknown: true},
	// Version 2: the same limits; membership (node.joined, node.suspect,
	// node.failed, node.left by orchestrators; node.drain by operators) and
	// operators' step decisions (step.decided) — types in categories that
	// version 1 does not give those roles, so version-1 ledgers refuse
	// them: upgrade every ledger node before the orchestrators
	// (protocol.md, "Upgrading to version 2").
	{Version: 2, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set1, Types: event.TypesAt(2), KeepUnknown: true},
	// Version 3: the same limits; alarms (alarm.raised, alarm.cleared) by
	// every node role — a category version 2 gives no role, so version-2
	// ledgers refuse them: upgrade every ledger node before the others
	// (protocol.md, "Upgrading to version 3").
	{Version: 3, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set1, Types: event.TypesAt(3), KeepUnknown: true},
	// Version 4: the same limits; credential revocation
	// (credential.revoked, by role admin), and payloads judged by secret
	// set 2 (bus/redact: the shapes redaction at creation catches).
	// Version-3 ledgers refuse both: upgrade every ledger node first
	// (protocol.md, "Upgrading to version 4").
	{Version: 4, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set2, Types: event.TypesAt(4), KeepUnknown: true},
	// Version 5: the same limits and secret set; the policy in force
	// (policy.applied by admins and leaders), gates (gate.opened and
	// gate.closed by orchestrators, gate.decided by operators), the
	// operator's brake (run.pause, run.resume) and the roots of trust
	// (trust.root_added, trust.root_retired by admins). Version-4 ledgers
	// refuse the new categories: upgrade every ledger node first
	// (protocol.md, "Upgrading to version 5").
	{Version: 5, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set2, Types: event.TypesAt(5), KeepUnknown: true},
	// Version 6: the same limits and secret set; critique steps
	// (critique.requested by orchestrators, critique.recorded by
	// planners). Version-5 ledgers refuse the new category: upgrade every
	// ledger node first (protocol.md, "Upgrading to version 6").
	{Version: 6, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set2, Types: event.TypesAt(6), KeepUnknown: true},
	// Version 7: the same limits; query answers are signed envelopes of
	// their own (typ "api.reply", see node/api and docs/protocol.md,
	// "Signed answers"), never ledger events; run brakes a ui node signs
	// on an operator's behalf (run.paused_for, run.resumed_for,
	// run.cancel_requested_for). Version-6 ledgers refuse them (no ui role
	// in the run category): ledger nodes first, as for version 6.
	{Version: 7, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set3, Types: event.TypesAt(7), KeepUnknown: true},
	// Version 8: the same limits and secret set; the types of tools,
	// knowledge and telemetry (the rows with Since 8 in bus/event's table:
	// plugins and pull requests, facts with provenance, artifacts and
	// research notes, ratings and proposals). Version-7 ledgers refuse the
	// new categories: ledger nodes first, as for version 6
	// (protocol.md, "Upgrading to version 8").
	{Version: 8, Algorithm: Algorithm, MaxMessageBytes: MaxMessageBytes, MaxEventBytes: MaxEventBytes,
		TTL: TTL, Leeway: Leeway, Secrets: redact.Set3, Types: event.TypesAt(8), KeepUnknown: true},
}

// Versions returns the rules table of this build, by version (a copy).
func Versions() []Rules {
	out := make([]Rules, len(versions))
	for i, r := range versions {
		r.Types = append([]event.Spec(nil), r.Types...)
		out[i] = r
	}
	return out
}

// Current returns the rules of Version (a copy).
func Current() Rules { return Versions()[Version] }

// checkTable panics unless table holds versions 0..n in order: a rules
// table is code, not input.
func checkTable(table []Rules) {
	if len(table) == 0 {
		panic("envelope: empty rules table")
	}
	for i, r := range table {
		if r.Version != i {
			panic(fmt.Sprintf("envelope: rules table row %d is version %d", i, r.Version))
		}
	}
}

// judging returns the rules a message declaring version v is judged by:
// its own, or the newest of table when v is newer than table knows (then
// unknown types are kept).
func judging(table []Rules, v int) Rules {
	if v < len(table) {
		return table[v]
	}
	r := table[len(table)-1]
	r.KeepUnknown = true
	return r
}
