package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultTimeout is the Client's request timeout when none is given.
const DefaultTimeout = 5 * time.Second

// Client asks the API over a NATS connection.
type Client struct {
	nc      *nats.Conn
	timeout time.Duration
	// prefix is put before the method: SubjectPrefix (the queue group), or
	// one node's subject (At).
	prefix string
	// node is the node At addresses ("" for any).
	node string
	// trust judges signed answers (WithTrust); nil takes any answer.
	trust *Trust
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
	return &Client{nc: nc, timeout: timeout, prefix: SubjectPrefix}
}

// WithTrust returns a client that takes only answers whose signature t
// verifies and whose signer may give them (signed.go): what every client
// whose answers a person sees or acts on uses. A refused answer is an
// error wrapping ErrUnverified.
func (c *Client) WithTrust(t *Trust) *Client {
	w := *c
	w.trust = t
	return &w
}

// Verified reports whether the client checks the signatures of answers.
func (c *Client) Verified() bool { return c.trust != nil }

// At returns a client whose requests go to node alone (NodeSubject):
// every page of a listing then comes from that one node. A node that is
// not there gives NoResponderError.
func (c *Client) At(node string) *Client {
	at := *c
	at.prefix, at.node = NodeSubject(node, ""), node
	return &at
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
	subj := c.prefix + method
	var body []byte
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return fmt.Errorf("api: encode %s request: %w", method, err)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := nats.NewMsg(subj)
	out.Data = body
	nonce := newNonce()
	out.Header.Set(HeaderNonce, nonce)
	msg, err := c.nc.RequestMsgWithContext(rctx, out)
	if err != nil {
		return c.requestError(ctx, subj, timeout, err)
	}
	if c.trust != nil {
		if _, err := c.trust.check(ctx, c, method, subj, nonce, body, msg); err != nil {
			return err
		}
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
		// A node took the request (else: no responders) and said nothing:
		// every failure it knows of comes back as an error, so this is
		// time alone.
		return WithHint(fmt.Errorf("%w: no answer to %s within %s", ErrTimeout, subj, timeout),
			"a node took the request but did not answer in time (it may be overloaded, or have stopped meanwhile); try again, or raise --timeout")
	case errors.Is(err, nats.ErrMaxPayload):
		return WithHint(fmt.Errorf("%w: the request to %s does not fit in one message on %s: %w", ErrTooLarge, subj, c.url(), err),
			"ask with a shorter request")
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

// Audit returns a page of ledger entries, every line whole: a line that
// came without its JWS (too large to share a page) has it fetched with
// LedgerMessage. Each line's Data is the payload exactly as the node sent
// it. With req.Wait set the request may take that much longer than the
// timeout. The page's End says whether the ledger has more now; Next is
// where to ask from, also at the end (a follower asks with it later).
func (c *Client) Audit(ctx context.Context, req AuditRequest) (*AuditPage, error) {
	var page AuditPage
	if err := c.call(ctx, MethodAudit, req, &page, c.timeout+max(req.Wait, 0)); err != nil {
		return nil, err
	}
	for i := range page.Items {
		if l := &page.Items[i]; l.JWSSize > 0 {
			raw, err := c.message(ctx, l.StreamSeq, l.JWSSize)
			if err != nil {
				return nil, fmt.Errorf("api: audit line %d: %w", l.Seq, err)
			}
			l.JWS, l.JWSSize = string(raw), 0
		}
	}
	return &page, nil
}

// AuditLines yields every entry req selects, page after page, up to the
// end of the ledger as the answering node has it.
func (c *Client) AuditLines(ctx context.Context, req AuditRequest) iter.Seq2[AuditLine, error] {
	return Walk(ctx, req.Cursor, func(ctx context.Context, cursor string) (*Page[AuditLine], error) {
		req.Cursor = cursor
		p, err := c.Audit(ctx, req)
		if err != nil {
			return nil, err
		}
		return &p.Page, nil
	})
}

// LedgerMessage returns the signed message stored at stream seq stream,
// read in chunks that each fit a page.
func (c *Client) LedgerMessage(ctx context.Context, stream uint64) ([]byte, error) {
	var raw []byte
	fetch := func(ctx context.Context, cursor string) (*Page[[]byte], error) {
		var p Page[[]byte]
		if err := c.Call(ctx, MethodLedgerMessage, MessageRequest{StreamSeq: stream, Cursor: cursor}, &p); err != nil {
			return nil, err
		}
		return &p, nil
	}
	for chunk, err := range Walk(ctx, "", fetch) {
		if err != nil {
			return nil, err
		}
		raw = append(raw, chunk...)
	}
	return raw, nil
}

// message is LedgerMessage, checked against the size a line announced.
func (c *Client) message(ctx context.Context, stream uint64, size int) ([]byte, error) {
	raw, err := c.LedgerMessage(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("fetch its message (stream seq %d): %w", stream, err)
	}
	if len(raw) != size {
		return nil, fmt.Errorf("its message (stream seq %d) is %d bytes, the line announced %d", stream, len(raw), size)
	}
	return raw, nil
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

// LedgerExport reads one page of the ledger export, every line whole: a
// line that came without its "jws" has its message fetched with
// LedgerMessage and put back, which gives the line exactly as
// ledger.Store.Export writes it.
func (c *Client) LedgerExport(ctx context.Context, req ExportRequest) (*ExportPage, error) {
	var p ExportPage
	if err := c.Call(ctx, MethodLedgerExport, req, &p); err != nil {
		return nil, err
	}
	for i := range p.Items {
		if l := &p.Items[i]; l.JWSSize > 0 {
			if err := c.completeExport(ctx, l); err != nil {
				return nil, fmt.Errorf("api: export line %d: %w", l.Seq, err)
			}
		}
	}
	return &p, nil
}

// completeExport puts the message back into l.Line at l.JWSAt.
func (c *Client) completeExport(ctx context.Context, l *ExportLine) error {
	if l.JWSAt <= 0 || l.JWSAt >= len(l.Line) {
		return fmt.Errorf("jws_at %d outside its %d-byte line", l.JWSAt, len(l.Line))
	}
	raw, err := c.message(ctx, l.StreamSeq, l.JWSSize)
	if err != nil {
		return err
	}
	str, err := json.Marshal(string(raw))
	if err != nil {
		return fmt.Errorf("encode its message: %w", err)
	}
	const key = `,"jws":`
	line := make([]byte, 0, len(l.Line)+len(key)+len(str))
	line = append(line, l.Line[:l.JWSAt]...)
	line = append(line, key...)
	line = append(line, str...)
	l.Line = append(line, l.Line[l.JWSAt:]...)
	l.JWSSize, l.JWSAt, l.StreamSeq = 0, 0, 0
	return nil
}

// ExportLines yields every line of the export req starts, page after page,
// up to the head the node had when the first page was read.
func (c *Client) ExportLines(ctx context.Context, req ExportRequest) iter.Seq2[ExportLine, error] {
	return Walk(ctx, req.Cursor, func(ctx context.Context, cursor string) (*Page[ExportLine], error) {
		req.Cursor = cursor
		p, err := c.LedgerExport(ctx, req)
		if err != nil {
			return nil, err
		}
		return &p.Page, nil
	})
}

// Export writes the whole export to w, each line exactly as
// ledger.Store.Export writes it, page after page until the node says the
// export has ended (at the head it had when the first page was read).
// progress, when set, is called after each page with the lines written
// and that head. Pages come from whichever node answers each request; ask
// At(node) for one node's export.
func (c *Client) Export(ctx context.Context, w io.Writer, progress func(n, head uint64)) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var last, n, head uint64
	fetch := func(ctx context.Context, cursor string) (*Page[ExportLine], error) {
		if cursor != "" && progress != nil {
			progress(n, head)
		}
		p, err := c.LedgerExport(ctx, ExportRequest{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		if cursor == "" {
			head = p.Head
		}
		return &p.Page, nil
	}
	for l, err := range Walk(ctx, "", fetch) {
		if err != nil {
			return fmt.Errorf("ledger export after record %d: %w", last, err)
		}
		if _, err := bw.Write(append(l.Line, '\n')); err != nil {
			return fmt.Errorf("ledger export: %w", err)
		}
		last, n = l.Seq, n+1
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("ledger export: %w", err)
	}
	if progress != nil {
		progress(n, head)
	}
	return nil
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
