package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go/jetstream"
)

// acceptPoll is how often a write asks again whether a ledger node has
// judged it, when the node answers at once (one that predates
// ledger.outcome's wait).
const acceptPoll = 50 * time.Millisecond

// acceptWait is how long one ledger.outcome waits on the node for the
// write to be judged: the node answers as soon as its ledger has folded
// it, so a write is confirmed in one request rather than a poll.
const acceptWait = 5 * time.Second

// ErrRefused marks a write a ledger node recorded as rejected.
var ErrRefused = errors.New("refused by the ledger")

// ErrUnconfirmed marks a write that reached the stream but that no ledger
// node judged within --timeout (exit ExitUnconfirmed).
var ErrUnconfirmed = errors.New("not confirmed by a ledger node")

// refusedError is a write the ledger recorded as event.rejected.
type refusedError struct {
	code, reason, node string
	streamSeq          uint64
}

func (e *refusedError) Error() string {
	code := e.code
	if code == "" {
		code = "no code"
	}
	return fmt.Sprintf("refused by the ledger: %s (%s; ledger node %s, stream seq %d)", code, e.reason, e.node, e.streamSeq)
}

func (e *refusedError) Unwrap() error { return ErrRefused }

// awaitAccepted waits until a ledger node has judged each published
// message (bounded by --timeout) and turns a rejection into an error
// carrying its code. With --no-wait-accept it returns at once.
func (a *app) awaitAccepted(ctx context.Context, acks []jetstream.PubAck) error {
	a.accepted = nil
	if a.noWaitAccept || len(acks) == 0 {
		return nil
	}
	nc, err := a.conn()
	if err != nil {
		return err
	}
	c, err := a.newClient(nc, a.timeout)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	for _, ack := range acks {
		if err := a.awaitOne(ctx, wctx, c, ack.Sequence); err != nil {
			return err
		}
	}
	for _, ack := range acks {
		a.accepted = append(a.accepted, ack.Sequence)
	}
	return nil
}

func (a *app) awaitOne(ctx, wctx context.Context, c *api.Client, seq uint64) error {
	var last *api.Outcome
	for {
		wait := acceptWait
		if dl, ok := wctx.Deadline(); ok {
			// Leave the answer time to come back within --timeout.
			wait = min(wait, time.Until(dl)*9/10)
		}
		asked := time.Now()
		o, err := c.LedgerOutcomeWait(wctx, seq, max(wait, 0))
		switch {
		case errors.Is(err, api.ErrNoNode):
			return &exitError{code: ExitUnconfirmed, err: api.WithHint(
				fmt.Errorf("%w: published (stream seq %d), but no ledger node answers %s on %s: nothing says whether the cluster accepts it", ErrUnconfirmed, seq, api.MethodLedgerOutcome, a.server),
				"agentctl audit tail shows what the ledger records once a ledger node runs")}
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil && wctx.Err() != nil:
			return a.unconfirmed(seq, last)
		case err != nil:
			return fmt.Errorf("ask a ledger node whether it accepted stream seq %d: %w", seq, err)
		}
		last = o
		if o.Judged() {
			return judge(o)
		}
		if time.Since(asked) >= min(wait, acceptPoll) {
			continue // the node waited: ask again at once
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wctx.Done():
			return a.unconfirmed(seq, last)
		case <-time.After(acceptPoll):
		}
	}
}

func (a *app) unconfirmed(seq uint64, last *api.Outcome) error {
	behind := ""
	if last != nil {
		behind = fmt.Sprintf(" (ledger node %s has folded up to stream seq %d)", last.Node, last.Applied)
	}
	return &exitError{code: ExitUnconfirmed, err: api.WithHint(
		fmt.Errorf("%w: published (stream seq %d), but no ledger node judged it within %s%s", ErrUnconfirmed, seq, a.timeout, behind),
		"a larger --timeout waits longer; agentctl audit tail shows what the ledger records")}
}

// judge reads a judged outcome: any event.rejected record refuses the
// write, and so does a message the ledger recorded nothing for.
func judge(o *api.Outcome) error {
	for _, r := range o.Records {
		if r.Type == string(event.Rejected) {
			err := &refusedError{code: r.Code, reason: r.Reason, node: o.Node, streamSeq: o.StreamSeq}
			if h := refusalHint(r.Code); h != "" {
				return api.WithHint(err, h)
			}
			return err
		}
	}
	if len(o.Records) == 0 {
		return &refusedError{reason: "the ledger recorded nothing for the message", node: o.Node, streamSeq: o.StreamSeq}
	}
	return nil
}

// refusalHint says what to do about a refusal code, when there is something.
func refusalHint(code string) string {
	switch event.RejectCode(code) {
	case event.RejectUnknownSigner:
		return "the cluster's root did not issue this credential: use that cluster's operator.creds"
	case event.RejectCredentialExpired:
		return "issue a new credential: agentctl keys operator NAME --root DIR --out FILE"
	case event.RejectRoleNotAllowed:
		return "the credential's roles may not publish this event"
	case event.RejectExpired, event.RejectNotYetValid:
		return "this machine's clock disagrees with the cluster's: check NTP"
	}
	return ""
}
