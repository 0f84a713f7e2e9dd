package api

import "context"

// LedgerOutcome asks a ledger node what it made of the message at stream
// sequence streamSeq.
func (c *Client) LedgerOutcome(ctx context.Context, streamSeq uint64) (*Outcome, error) {
	var o Outcome
	if err := c.Call(ctx, MethodLedgerOutcome, OutcomeRequest{StreamSeq: streamSeq}, &o); err != nil {
		return nil, err
	}
	return &o, nil
}
