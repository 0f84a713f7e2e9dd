package apiwire

import (
	"encoding/json"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
)

// Subjects.
const (
	SubjectPrefix = "agentic.api."
	// QueueGroup makes one node answer each request.
	QueueGroup = "agentic-api"

	MethodRunsList     = "runs.list"
	MethodRunsGet      = "runs.get"
	MethodAudit        = "audit"
	MethodLedgerVerify = "ledger.verify"
	MethodLedgerExport = "ledger.export"
	// MethodLedgerMessage returns a stored signed message in chunks: how a
	// client gets the "jws" of a line too large for a page.
	MethodLedgerMessage = "ledger.message"
	MethodMemoryGet     = "memory.get"
	MethodMemoryList    = "memory.list"
	MethodNodeInfo      = "node.info"
	// MethodLedgerHead answers a ledger node's head (seq, hash, applied
	// stream seq) and, when asked, its chain hash at an earlier seq. Ledger
	// nodes also answer it on AllSubject (every node answers: Client.Gather).
	MethodLedgerHead = "ledger.head"
	// MethodRevocationsList answers every credential revocation the
	// ledger holds, in stream order ([]Revocation): what an administrator
	// builds the NATS account's revocation list from.
	MethodRevocationsList = "revocations.list"
	// MethodCredentialsList answers the credentials of one identity the
	// ledger has seen signing (CredentialsRequest → []CredentialSeen):
	// how an administrator finds the NATS user keys to revoke.
	MethodCredentialsList = "credentials.list"
	// MethodPolicyShow answers one version of the policy in force — the
	// newest when none is asked — with its text (PolicyRequest →
	// PolicyVersion).
	MethodPolicyShow = "policy.show"
	// MethodPolicyList answers the policy's versions, newest first,
	// without their text (Page of PolicyVersion).
	MethodPolicyList = "policy.list"
	// MethodMemoryCommands answers the command statistics of a memory
	// node — shapes that failed most first — and the adaptive notes a
	// planner's prompt carries (CommandsRequest → CommandStats).
	MethodMemoryCommands = "memory.commands"
	// MethodGatesList answers the open gates, oldest first, optionally of
	// one run or one step (GatesRequest → Page of Gate).
	MethodGatesList = "gates.list"
)

// Revocation is a credential.revoked event the ledger accepted.
type Revocation struct {
	event.CredentialRevokedData
	// Seq is the ledger seq, StreamSeq the stream position from which
	// the revocation applies, By the administrator who signed it, Event
	// its event id.
	Seq       uint64    `json:"seq"`
	StreamSeq uint64    `json:"stream_seq"`
	By        string    `json:"by"`
	Event     string    `json:"event"`
	Time      time.Time `json:"time"`
}

// CredentialsRequest asks for the credentials of Kind and ID.
type CredentialsRequest struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// CredentialSeen is one credential the ledger saw sign an accepted or a
// refused event.
type CredentialSeen struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Key is the fingerprint of the credential's public key
	// (trust.Fingerprint).
	Key string `json:"key"`
	// NATSUser is the NATS user public key the credential names ("" for
	// a credential issued before credentials named one).
	NATSUser string    `json:"nats_user,omitempty"`
	Issued   time.Time `json:"issued"`
	Expires  time.Time `json:"expires"`
	// FirstSeq is the ledger seq of the first event it signed.
	FirstSeq uint64 `json:"first_seq"`
}

// NodeSubject is the subject on which node alone answers method (no queue
// group): what a client asks when the answer must come from one node, such
// as the pages of one export or a per-node comparison.
func NodeSubject(node, method string) string {
	return SubjectPrefix + "at." + node + "." + method
}

// AllSubject is the subject on which every node serving method answers a
// request, each with its own reply (no queue group): a scatter-gather, for
// the methods a Server marks with Broadcast.
func AllSubject(method string) string {
	return SubjectPrefix + "all." + method
}

// Reply wraps every answer: Error is set on failure, Data otherwise.
type Reply struct {
	Error string `json:"error,omitempty"`
	// Hint tells a user what to do about Error, when there is something.
	Hint string `json:"hint,omitempty"`
	// Code classifies Error for programs (CodeNotFound, CodeAmbiguous,
	// CodeBadRequest, CodeTooLarge, CodeBusy); empty for other failures.
	Code string `json:"code,omitempty"`
	Data any    `json:"data,omitempty"`
}

// AuditRequest asks for a page of the ledger, oldest first. The first page
// starts after After (or at Since); each next one at the Next of the page
// before, given as Cursor.
type AuditRequest struct {
	// After returns entries with seq > After. It may not be beyond the
	// head (ErrBadRequest), except in a long-poll, which waits for the head
	// to reach it when it is near.
	After uint64 `json:"after,omitempty"`
	// Cursor is the Next of the previous page; it replaces After.
	Cursor string `json:"cursor,omitempty"`
	// Run restricts to one run (id or prefix), through the ledger's run
	// index.
	Run string `json:"run,omitempty"`
	// Since starts at the first entry whose stream time is at or after it
	// (the time the stream stamped the message: AuditLine.StreamTime),
	// through the ledger's time index; every entry after that one follows.
	Since time.Time `json:"since,omitzero"`
	// Types restricts to events of these types (empty: every type). The
	// filter is applied by the node as it reads, so a page may hold fewer
	// entries than Limit — or none — without being the end: Page.End is.
	Types []string `json:"types,omitempty"`
	// Limit caps the page (default and maximum 1000); pages are also cut
	// by size, so a shorter page is not the end: Page.End is.
	Limit int `json:"limit,omitempty"`
	// Wait long-polls: if nothing is past the cursor, wait up to this long
	// (at most 30s) for something to commit.
	Wait time.Duration `json:"wait,omitempty"`
}

// LongPoll reports whether the request may wait (Wait > 0): the Server runs
// it under its long-poll budget, not MaxConcurrent.
func (r AuditRequest) LongPoll() bool { return r.Wait > 0 }

// AuditLine is one ledger entry, as documented in docs/cli.md.
type AuditLine struct {
	Seq     uint64    `json:"seq"`
	Subject string    `json:"subject"`
	Type    string    `json:"type"`
	Run     string    `json:"run,omitempty"`
	Node    string    `json:"node"`
	Time    time.Time `json:"time"`
	// Data is the payload exactly as the event carried it (null if none).
	Data json.RawMessage `json:"data"`
	// JWS is the exact signed envelope the event travelled in (shared by the
	// events of one batch); empty for ledger-local records with no message.
	JWS string `json:"jws"`
	// StreamSeq is the stream sequence of the message that carried it.
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	// StreamTime is the time the stream stamped that message: the clock
	// events are judged by, and what AuditRequest.Since selects on.
	StreamTime time.Time `json:"stream_time,omitzero"`
	// JWSSize, when set, says the line came without its JWS (the line with
	// it did not fit a page): its size in bytes. The Client fetches it with
	// MethodLedgerMessage (StreamSeq) and fills JWS, clearing JWSSize.
	JWSSize int `json:"jws_size,omitempty"`
}

// LedgerPage is a page of a listing of the ledger (audit, ledger.export):
// the items, where the next page starts (Next, kept at End so a follower
// can ask later), and the ledger head when the page was read.
type LedgerPage[T any] struct {
	Page[T]
	// Head is the ledger head seq at the time of the answer.
	Head uint64 `json:"head"`
}

// AuditPage is the answer to an AuditRequest.
type AuditPage = LedgerPage[AuditLine]

// VerifyResult is the answer to ledger.verify.
type VerifyResult struct {
	OK          bool   `json:"ok"`
	Events      uint64 `json:"events"`
	Head        string `json:"head"`
	FirstBadSeq uint64 `json:"first_bad_seq,omitempty"`
	Error       string `json:"error,omitempty"`
	Node        string `json:"node,omitempty"`
}

// ExportRequest asks for a page of the ledger export (JSON Lines in the
// format of ledger.Store.Export). An export ends at the head of the ledger
// when its first page was read: the cursor carries that bound.
type ExportRequest struct {
	// After starts a new export with the record after seq After.
	After uint64 `json:"after,omitempty"`
	// Cursor is the Next of the previous page; it replaces After.
	Cursor string `json:"cursor,omitempty"`
	// Limit caps the page (default and maximum 5000 records); pages are
	// also cut by size.
	Limit int `json:"limit,omitempty"`
}

// ExportLine is one record of the export.
type ExportLine struct {
	// Seq is the record's position.
	Seq uint64 `json:"seq"`
	// Line is the record's line exactly as ledger.Store.Export writes it
	// (without the newline), or, when JWSSize is set, that line without its
	// "jws" member.
	Line json.RawMessage `json:"line"`
	// JWSSize, when set, is the size of the signed message left out of
	// Line. The Client fetches it with MethodLedgerMessage (StreamSeq) and
	// inserts `,"jws":` and the message as a JSON string at byte JWSAt of
	// Line, which gives the line byte for byte; it clears the three fields.
	JWSSize   int    `json:"jws_size,omitempty"`
	JWSAt     int    `json:"jws_at,omitempty"`
	StreamSeq uint64 `json:"stream_seq,omitempty"`
}

// ExportPage is one page of the export.
type ExportPage = LedgerPage[ExportLine]

// MessageRequest asks for a stored signed message (the "jws" of its
// records) by stream sequence. The answer is a Page of chunks of its bytes
// (base64 in JSON), in order; Cursor is the Next of the previous page.
type MessageRequest struct {
	StreamSeq uint64 `json:"stream_seq"`
	Cursor    string `json:"cursor,omitempty"`
}

// HeadRequest asks a ledger node for its head and, with At > 0, for its
// chain hash at record At (which must not be beyond its head).
type HeadRequest struct {
	At uint64 `json:"at,omitempty"`
}

// LedgerHead is a ledger node's head, as ledger.head answers it.
type LedgerHead struct {
	// Node is the node that answered.
	Node string `json:"node"`
	// Seq and Hash are the head record's position and chain hash (hex);
	// 0 and 64 zeros for an empty ledger.
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
	// Applied is the highest stream sequence the ledger has folded.
	Applied uint64 `json:"applied_stream_seq"`
	// At and AtHash are the record asked for with HeadRequest.At and its
	// chain hash (absent when none was asked).
	At     uint64 `json:"at,omitempty"`
	AtHash string `json:"at_hash,omitempty"`
}

// MemoryGetRequest reads one fact.
type MemoryGetRequest struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
}

// MemoryListRequest lists facts of a scope ("" for all scopes).
type MemoryListRequest struct {
	Scope string `json:"scope,omitempty"`
}

// Fact is a memory fact.
type Fact struct {
	Scope     string     `json:"scope"`
	Key       string     `json:"key"`
	Value     string     `json:"value"`
	UpdatedAt time.Time  `json:"updated_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	// Tags label the fact; Refs say what wrote it (absent from nodes
	// older than Memory 2.0).
	Tags []string `json:"tags,omitempty"`
	Refs *Refs    `json:"refs,omitempty"`
	// Quarantined facts are shown to operators, never to plans or
	// prompts; Reason says why, Released who released it.
	Quarantined bool   `json:"quarantined,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Released    string `json:"released,omitempty"`
	// Note is the research note a fact of scope kb is: question, claim,
	// citations, confidence (protocol version 8).
	Note *event.KbNotedData `json:"note,omitempty"`
}

// NodeInfo describes the answering node.
type NodeInfo struct {
	ID      string   `json:"id"`
	Roles   []string `json:"roles"`
	Version string   `json:"version"`
	NATS    string   `json:"nats"`
	// Root is the fingerprint of the root key the node trusts
	// (trust.Fingerprint): the cluster's trust anchor, which every
	// credential its ledger accepts was issued by. Empty from nodes older
	// than the field.
	Root   string `json:"root,omitempty"`
	Leader string `json:"leader,omitempty"`
	Epoch  uint64 `json:"epoch,omitempty"`
	// Gossip is the node's gossip address; empty when it runs no gossip.
	Gossip string `json:"gossip,omitempty"`
	// Members counts the members its gossip sees alive or suspect,
	// itself included (0 without gossip).
	Members int `json:"members,omitempty"`
	// GossipJoinError says why joining the configured members fails
	// while it sees no other member.
	GossipJoinError string `json:"gossip_join_error,omitempty"`
	// LeaderReason says why Leader is empty on a node that knows
	// leadership (a ledger node): no lease, or a lease not renewed within
	// the lease TTL. Leader and Epoch are those of a live lease only.
	LeaderReason string `json:"leader_reason,omitempty"`
	// Ready says the node can make progress; NotReady says why not (the
	// first blocking check that fails, "<check>: <reason>").
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	// Checks is the last result of each readiness check.
	Checks []health.Status `json:"checks,omitempty"`
}
