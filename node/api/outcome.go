package api

import (
	"context"
	"time"
)

// LedgerOutcome asks a ledger node what it made of the message at stream
// sequence streamSeq.
func (c *Client) LedgerOutcome(ctx context.Context, streamSeq uint64) (*Outcome, error) {
	var o Outcome
	if err := c.Call(ctx, MethodLedgerOutcome, OutcomeRequest{StreamSeq: streamSeq}, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// LedgerOutcomeWait is LedgerOutcome that waits up to wait (at most
// MaxOutcomeWait) for the answering ledger node to fold streamSeq: one
// request instead of a poll. A node that predates the wait answers at
// once, judged or not.
func (c *Client) LedgerOutcomeWait(ctx context.Context, streamSeq uint64, wait time.Duration) (*Outcome, error) {
	wait = min(wait, MaxOutcomeWait)
	var o Outcome
	if err := c.call(ctx, MethodLedgerOutcome, OutcomeRequest{StreamSeq: streamSeq, Wait: wait}, &o, c.timeout+wait); err != nil {
		return nil, err
	}
	return &o, nil
}
