package apiwire

import "time"

// MethodLedgerOutcome answers what a ledger node made of the stream
// message at a stream sequence: the records it appended for it (events
// accepted, or event.rejected with a code), once its ledger has folded
// that far. It is how a publisher learns whether the cluster accepted its
// write (agentctl waits for it).
const MethodLedgerOutcome = "ledger.outcome"

// OutcomeRequest asks for the records of the message at StreamSeq.
type OutcomeRequest struct {
	StreamSeq uint64 `json:"stream_seq"`
	// Wait long-polls: while the answering ledger has not folded
	// StreamSeq, it waits up to this long (at most MaxOutcomeWait) for it
	// before it answers. A node that predates Wait answers at once.
	Wait time.Duration `json:"wait,omitempty"`
}

// MaxOutcomeWait bounds the Wait of one ledger.outcome.
const MaxOutcomeWait = 10 * time.Second

// LongPoll reports whether the request may wait (Wait > 0): the Server runs
// it among its long-polls.
func (r OutcomeRequest) LongPoll() bool { return r.Wait > 0 }

// Outcome is a ledger node's answer to an OutcomeRequest.
type Outcome struct {
	// Node is the ledger node that answered.
	Node      string `json:"node"`
	StreamSeq uint64 `json:"stream_seq"`
	// Applied is the highest stream sequence the node's ledger has folded:
	// below StreamSeq, the message is not judged yet (ask again).
	Applied uint64 `json:"applied_stream_seq"`
	// Records are the ledger records the message made, in order (ledger
	// gap records left out). Empty once Applied >= StreamSeq means the
	// ledger recorded nothing for it.
	Records []OutcomeRecord `json:"records"`
}

// Judged reports whether the answering ledger has folded the message.
func (o *Outcome) Judged() bool { return o.Applied >= o.StreamSeq }

// OutcomeRecord is one ledger record of a message.
type OutcomeRecord struct {
	Seq  uint64 `json:"seq"`
	Type string `json:"type"`
	// ID is the event id (the id the message claims for a rejection).
	ID string `json:"id"`
	// Code and Reason are those of an event.rejected record.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
}
