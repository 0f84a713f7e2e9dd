package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultGatherWait is how long Gather collects answers when the caller
// gives no wait.
const DefaultGatherWait = time.Second

// Answer is one node's reply to a Gather: its decoded data, or the error it
// answered.
type Answer[T any] struct {
	// Node is the node that answered (its Agentic-Node header).
	Node string
	Data T
	Err  error
}

// Gather asks every node that serves method on AllSubject (a method its
// Server marks with Broadcast) and collects the answers that come within
// wait (DefaultGatherWait when wait <= 0), sorted by node name. There is
// no list of nodes to wait for: a node slower than wait is missing from
// the result. No node serving the method at all is NoResponderError.
func Gather[T any](ctx context.Context, c *Client, method string, req any, wait time.Duration) ([]Answer[T], error) {
	return GatherFrom[T](ctx, c, method, req, wait, nil)
}

// GatherFrom is Gather that returns as soon as every node of expect has
// answered (still at most wait): for a caller that knows which nodes
// should answer. Nodes not in expect that answer meanwhile are kept.
func GatherFrom[T any](ctx context.Context, c *Client, method string, req any, wait time.Duration, expect []string) ([]Answer[T], error) {
	if wait <= 0 {
		wait = DefaultGatherWait
	}
	subj := AllSubject(method)
	var body []byte
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return nil, fmt.Errorf("api: encode %s request: %w", method, err)
		}
	}
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("api: gather %s on %s: %w", subj, c.url(), err)
	}
	defer func() { _ = sub.Unsubscribe() }() // fails only on a closed connection: nothing to undo
	out0 := nats.NewMsg(subj)
	out0.Reply, out0.Data = inbox, body
	nonce := newNonce()
	out0.Header.Set(HeaderNonce, nonce)
	if err := c.nc.PublishMsg(out0); err != nil {
		return nil, c.requestError(ctx, subj, wait, err)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []Answer[T]
	missing := make(map[string]bool, len(expect))
	for _, n := range expect {
		missing[n] = true
	}
	for {
		if len(expect) > 0 && len(missing) == 0 {
			slices.SortFunc(out, func(a, b Answer[T]) int { return strings.Compare(a.Node, b.Node) })
			return out, nil
		}
		m, err := sub.NextMsgWithContext(wctx)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("api: gather %s: %w", subj, ctx.Err())
		case errors.Is(err, context.DeadlineExceeded):
			slices.SortFunc(out, func(a, b Answer[T]) int { return strings.Compare(a.Node, b.Node) })
			return out, nil
		case errors.Is(err, nats.ErrNoResponders):
			return nil, &NoResponderError{Subject: subj, URL: c.url()}
		case err != nil:
			return nil, fmt.Errorf("api: gather %s on %s: %w", subj, c.url(), err)
		}
		if c.trust != nil {
			signer, err := c.trust.check(ctx, c, method, subj, nonce, body, m)
			if err != nil {
				// Not an answer of the cluster's: dropped, and said
				// among the answers (a node that cannot sign is seen).
				out = append(out, Answer[T]{Node: "?" + m.Header.Get(HeaderNode), Err: err})
				continue
			}
			m.Header.Set(HeaderNode, signer.ID)
		}
		a := decodeAnswer[T](method, m)
		delete(missing, a.Node)
		out = append(out, a)
	}
}

// decodeAnswer turns one reply into an Answer.
func decodeAnswer[T any](method string, m *nats.Msg) Answer[T] {
	a := Answer[T]{Node: m.Header.Get(HeaderNode)}
	var r wireReply
	switch err := json.Unmarshal(m.Data, &r); {
	case err != nil:
		a.Err = fmt.Errorf("api: %s: undecodable answer from node %q: %w", method, a.Node, err)
	case r.Error != "":
		a.Err = &RemoteError{Method: method, Node: a.Node, Message: r.Error, Hint: r.Hint, Code: r.Code}
	case len(r.Data) == 0:
		a.Err = fmt.Errorf("api: %s: empty answer from node %q", method, a.Node)
	default:
		if err := json.Unmarshal(r.Data, &a.Data); err != nil {
			a.Err = fmt.Errorf("api: %s: decode answer from node %q: %w", method, a.Node, err)
		}
	}
	return a
}

// LedgerHead asks for the answering node's ledger head and, with at > 0,
// its chain hash at record at (ErrBadRequest when at is beyond its head).
// With At, the node asked answers.
func (c *Client) LedgerHead(ctx context.Context, at uint64) (*LedgerHead, error) {
	var h LedgerHead
	if err := c.Call(ctx, MethodLedgerHead, HeadRequest{At: at}, &h); err != nil {
		return nil, err
	}
	if c.node != "" && h.Node != c.node {
		return nil, fmt.Errorf("api: %s: asked node %q, node %q answered", MethodLedgerHead, c.node, h.Node)
	}
	return &h, nil
}

// LedgerHeads gathers the heads of every ledger node that answers within
// wait (see Gather), sorted by node. Nodes that answered an error are
// returned with it, joined in the error; the heads of the others come
// anyway.
func (c *Client) LedgerHeads(ctx context.Context, wait time.Duration) ([]LedgerHead, error) {
	answers, err := Gather[LedgerHead](ctx, c, MethodLedgerHead, HeadRequest{}, wait)
	if err != nil {
		return nil, err
	}
	var heads []LedgerHead
	var errs []error
	for _, a := range answers {
		if a.Err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", a.Node, a.Err))
			continue
		}
		heads = append(heads, a.Data)
	}
	return heads, errors.Join(errs...)
}
