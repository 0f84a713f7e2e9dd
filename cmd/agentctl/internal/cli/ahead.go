package cli

import (
	"context"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
)

// A write's round trips before its publish — the connection (TCP, the
// server's INFO, CONNECT with the NATS user's JWT, PING/PONG), the root
// check (node.info) and the revocations asked ahead — wait on the server
// and the node, not on agentctl. goal submit starts them at once, in the
// background (dialAhead), while it reads and checks the plan, makes the
// event and signs it; the publish then takes the connection and the
// root's answer in hand (conn joins them). Nothing is published before
// the root answered and matched, as before; a plan that fails its check
// still fails first, and the connection made for it is closed unused.

// ahead is a connection being made in the background, with the cluster's
// root asked over it. Its goroutine writes the fields, then closes done;
// nothing reads them before done is closed.
type ahead struct {
	done   chan struct{}
	cancel context.CancelFunc
	nc     *nats.Conn
	err    error
	// root is node.info's answer: the cluster's root (rootAsked set).
	root      string
	rootErr   error
	rootAsked bool
}

// dialAhead starts connecting to the cluster in the background, and once
// connected asks the cluster's root and (for a write that waits for the
// ledger's judgement) the revocations that check that judgement. conn
// takes the result; close waits for the goroutine, cancelling a dial
// still under way. A no-op once connected or started.
func (a *app) dialAhead(ctx context.Context) {
	if a.nc != nil || a.ahead != nil {
		return
	}
	actx, cancel := context.WithCancel(ctx)
	h := &ahead{done: make(chan struct{}), cancel: cancel}
	a.ahead = h
	go func() {
		defer close(h.done)
		d := &ctxDialer{ctx: actx, timeout: a.timeout}
		h.nc, h.err = a.dial(a.timeout, nats.SetCustomDialer(d))
		d.handshakeDone()
		if h.err != nil {
			return
		}
		// The revocations, which check the ledger's judgement after the
		// publish, are asked beside the root, so that the node answers
		// them (and agentctl checks the answer) before the goal is
		// published, not while the node works on it. They need the creds
		// file's root: parsed with the signing identity, on the plan's
		// side or here, whichever comes first.
		var revs sync.WaitGroup
		if !a.noWaitAccept {
			revs.Go(func() {
				if _, err := a.credsRoot(a.credsPath()); err == nil {
					a.prefetchRevocationsOn(h.nc)
				}
			})
		}
		info, err := api.NewClient(h.nc, a.timeout).NodeInfo(actx)
		h.rootAsked = true
		if err != nil {
			h.rootErr = err
		} else {
			h.root = info.Root
		}
		revs.Wait()
	}()
	// Let the goroutine run first: it reads the creds and sends the
	// connection's first packets before this one parses the plan, so that
	// the server's side of the handshake overlaps that work even when
	// agentctl gets one CPU only (on a busy machine the other thread may
	// wait milliseconds for one).
	runtime.Gosched()
}

// joinAhead waits for a connection made by dialAhead and takes it (and
// the root it asked) into the invocation. A connection that closed in
// the meantime (the server restarted while a plan was read from a FIFO)
// is dropped: conn dials again.
func (a *app) joinAhead() {
	h := a.ahead
	if h == nil {
		return
	}
	<-h.done
	h.cancel()
	a.ahead = nil
	switch {
	case h.err != nil:
		a.aheadErr = h.err
	case h.nc.IsClosed():
		return
	default:
		a.nc = h.nc
	}
	if h.rootAsked && !a.root.asked {
		a.root = rootAnswer{asked: true, root: h.root}
		if h.rootErr != nil {
			a.root.err = errAskRoot(h.rootErr)
		}
	}
}

// ctxDialer dials NATS's TCP connection under a context, and ends the
// handshake that follows (the server's INFO, CONNECT, PING/PONG) when
// the context ends before handshakeDone: a connection made ahead is
// given up at once when the command ends without it (a plan that failed
// its check), even on a server that accepted it and never answers.
type ctxDialer struct {
	ctx     context.Context
	timeout time.Duration
	// stop ends the watch on ctx; set by Dial (on the goroutine that
	// calls nats.Connect, as handshakeDone is).
	stop func() bool
}

// Dial implements nats.CustomDialer.
func (d *ctxDialer) Dial(network, address string) (net.Conn, error) {
	nd := net.Dialer{Timeout: d.timeout}
	c, err := nd.DialContext(d.ctx, network, address)
	if err != nil {
		return nil, err
	}
	if d.stop != nil {
		d.stop() // an earlier address's connection, given up by nats.go
	}
	d.stop = context.AfterFunc(d.ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return c, nil
}

// handshakeDone stops watching the context: the connection is made (or
// failed), and from now on it lives until the command closes it.
func (d *ctxDialer) handshakeDone() {
	if d.stop != nil {
		d.stop()
	}
}
