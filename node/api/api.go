package api

import (
	"encoding/json"
	"time"
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
	MethodMemoryGet    = "memory.get"
	MethodMemoryList   = "memory.list"
	MethodNodeInfo     = "node.info"
)

// Reply wraps every answer: Error is set on failure, Data otherwise.
type Reply struct {
	Error string `json:"error,omitempty"`
	// Hint tells a user what to do about Error, when there is something.
	Hint string `json:"hint,omitempty"`
	// Code classifies Error for programs (CodeNotFound, CodeAmbiguous,
	// CodeBadRequest); empty for other failures.
	Code string `json:"code,omitempty"`
	Data any    `json:"data,omitempty"`
}

// AuditRequest pages through the ledger.
type AuditRequest struct {
	// After returns entries with seq > After.
	After uint64 `json:"after,omitempty"`
	// Run restricts to one run (id or prefix).
	Run string `json:"run,omitempty"`
	// Since restricts to entries newer than this time.
	Since time.Time `json:"since,omitzero"`
	// Limit caps the page (default 1000).
	Limit int `json:"limit,omitempty"`
	// Wait long-polls: if nothing is past After, wait up to this long.
	Wait time.Duration `json:"wait,omitempty"`
}

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
}

// AuditPage is the answer to an AuditRequest.
type AuditPage struct {
	Lines []AuditLine `json:"lines"`
	// Head is the ledger head seq at the time of the answer.
	Head uint64 `json:"head"`
}

// VerifyResult is the answer to ledger.verify.
type VerifyResult struct {
	OK          bool   `json:"ok"`
	Events      uint64 `json:"events"`
	Head        string `json:"head"`
	FirstBadSeq uint64 `json:"first_bad_seq,omitempty"`
	Error       string `json:"error,omitempty"`
	Node        string `json:"node,omitempty"`
}

// ExportRequest asks for a page of the ledger export (JSON Lines).
type ExportRequest struct {
	// After returns records with seq > After.
	After uint64 `json:"after,omitempty"`
	// Limit caps the page (default and maximum 5000 records).
	Limit int `json:"limit,omitempty"`
}

// ExportPage is one page of the export: JSONL text in the ledger's export
// format (one record per line; see ledger.Store.Export).
type ExportPage struct {
	JSONL string `json:"jsonl"`
	// Last is the seq of the last record in the page (0: none).
	Last uint64 `json:"last"`
	// Head is the ledger head when the page was read.
	Head uint64 `json:"head"`
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
}

// NodeInfo describes the answering node.
type NodeInfo struct {
	ID      string   `json:"id"`
	Roles   []string `json:"roles"`
	Version string   `json:"version"`
	NATS    string   `json:"nats"`
	Leader  string   `json:"leader,omitempty"`
	Epoch   uint64   `json:"epoch,omitempty"`
}
