package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultTimeout is the Client's request timeout when none is given.
const DefaultTimeout = 5 * time.Second

// Client asks the API over a NATS connection.
type Client struct {
	nc      *nats.Conn
	timeout time.Duration
}

// VerifyTimeout is the least time LedgerVerify waits for its answer.
const VerifyTimeout = 10 * time.Minute

// NewClient returns a client whose requests time out after timeout
// (DefaultTimeout when timeout <= 0); an audit long-poll gets its Wait on
// top.
func NewClient(nc *nats.Conn, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{nc: nc, timeout: timeout}
}

// Call sends req (JSON-encoded; nil sends an empty body) to method and
// decodes Reply.Data into resp (skipped when resp is nil).
func (c *Client) Call(ctx context.Context, method string, req, resp any) error {
	return c.call(ctx, method, req, resp, c.timeout)
}

// wireReply is Reply as received: Data kept raw for typed decoding.
type wireReply struct {
	Error string          `json:"error"`
	Hint  string          `json:"hint"`
	Code  string          `json:"code"`
	Data  json.RawMessage `json:"data"`
}

func (c *Client) call(ctx context.Context, method string, req, resp any, timeout time.Duration) error {
	subj := SubjectPrefix + method
	var body []byte
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return fmt.Errorf("api: encode %s request: %w", method, err)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := c.nc.RequestWithContext(rctx, subj, body)
	if err != nil {
		return c.requestError(ctx, subj, timeout, err)
	}
	var r wireReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return fmt.Errorf("api: %s: undecodable answer from node %q: %w", method, msg.Header.Get(HeaderNode), err)
	}
	if r.Error != "" {
		return &RemoteError{Method: method, Node: msg.Header.Get(HeaderNode), Message: r.Error, Hint: r.Hint, Code: r.Code}
	}
	if resp == nil || len(r.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Data, resp); err != nil {
		return fmt.Errorf("api: %s: decode answer from node %q: %w", method, msg.Header.Get(HeaderNode), err)
	}
	return nil
}

func (c *Client) requestError(ctx context.Context, subj string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return &NoResponderError{Subject: subj, URL: c.url()}
	case ctx.Err() != nil: // the caller gave up (Ctrl-C, its own deadline)
		return fmt.Errorf("api: %s: %w", subj, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return WithHint(fmt.Errorf("%w: no answer to %s within %s", ErrTimeout, subj, timeout),
			"the node may be busy or partitioned; try again or raise --timeout")
	}
	return fmt.Errorf("api: request %s on %s: %w", subj, c.url(), err)
}

// url is the server the connection uses, for messages.
func (c *Client) url() string {
	if u := c.nc.ConnectedUrlRedacted(); u != "" {
		return u
	}
	if s := c.nc.Servers(); len(s) > 0 {
		return s[0]
	}
	return "the NATS server"
}

// Audit returns a page of ledger entries. Each line's Data is a
// json.RawMessage holding the payload exactly as the node sent it. With
// req.Wait set the request may take that much longer than the timeout.
func (c *Client) Audit(ctx context.Context, req AuditRequest) (*AuditPage, error) {
	var page AuditPage
	if err := c.call(ctx, MethodAudit, req, &page, c.timeout+max(req.Wait, 0)); err != nil {
		return nil, err
	}
	return &page, nil
}

// LedgerVerify has the answering node verify its ledger's hash chain.
func (c *Client) LedgerVerify(ctx context.Context) (*VerifyResult, error) {
	var v VerifyResult
	// Verifying re-checks every signature (~10k/s per core): a large
	// ledger takes longer than an ordinary request.
	if err := c.call(ctx, MethodLedgerVerify, struct{}{}, &v, max(c.timeout, VerifyTimeout)); err != nil {
		return nil, err
	}
	return &v, nil
}

// LedgerExport reads one page of the ledger export.
func (c *Client) LedgerExport(ctx context.Context, req ExportRequest) (*ExportPage, error) {
	var p ExportPage
	if err := c.Call(ctx, MethodLedgerExport, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// MemoryGet reads one fact.
func (c *Client) MemoryGet(ctx context.Context, scope, key string) (*Fact, error) {
	var f Fact
	if err := c.Call(ctx, MethodMemoryGet, MemoryGetRequest{Scope: scope, Key: key}, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// MemoryList lists the facts of scope ("" for every scope).
func (c *Client) MemoryList(ctx context.Context, scope string) ([]Fact, error) {
	var facts []Fact
	if err := c.Call(ctx, MethodMemoryList, MemoryListRequest{Scope: scope}, &facts); err != nil {
		return nil, err
	}
	return facts, nil
}

// NodeInfo describes the node that answers.
func (c *Client) NodeInfo(ctx context.Context) (*NodeInfo, error) {
	var info NodeInfo
	if err := c.Call(ctx, MethodNodeInfo, struct{}{}, &info); err != nil {
		return nil, err
	}
	return &info, nil
}
