package cli

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
)

// Every answer agentctl shows or acts on is signed by the node that gave
// it, and checked here (node/api, "Signed answers"): against the root of
// the credentials file, by the signer's roles, and against the
// revocations the ledger holds (asked once per invocation, through the
// same checked client).

// replyTrust is the invocation's judge of answers, made once.
type replyTrust struct {
	once  sync.Once
	trust *api.Trust
	err   error
	// revocations, asked once: by identity, the newest Before.
	mu      sync.Mutex
	asked   bool
	revoked api.RevokedSet
	askErr  error
	// answered is closed once revoked and askErr are set (asked is set
	// before): a check that comes while the question is out waits for it.
	answered chan struct{}
	// askedAgain: the question was asked again, once, after it failed on
	// a connection closed since (the one made ahead, dropped while a plan
	// was read).
	askedAgain bool
}

// answerTrust is the Trust of this invocation's clients: nil, with a
// warning on stderr, when there is no credentials file to take the root
// from (a cluster without a locked bus; answers are then taken as they
// come).
func (a *app) answerTrust() (*api.Trust, error) {
	rt := &a.replies
	rt.once.Do(func() {
		path := a.credsPath()
		root, err := a.credsRoot(path)
		if err != nil {
			if _, serr := os.Stat(path); os.IsNotExist(serr) {
				fmt.Fprintf(a.env.Stderr, "warning: no credentials file at %s: the cluster's answers cannot be checked against its root\n", path)
				return
			}
			rt.err = fmt.Errorf("read the root of %s, to check the cluster's answers: %w", path, err)
			return
		}
		rt.trust = &api.Trust{Verifier: envelope.NewVerifier(root), Revoked: a.revokedSigner, LearnRoots: true}
	})
	return rt.trust, rt.err
}

// revokedSigner clears c against the ledger's revocations: nil when
// they do not revoke it, else why an answer it signed is refused. The
// revocations are asked once, of whichever ledger node answers
// (prefetchRevocations may have asked already); the answer asking them is
// itself checked against them. A check that cannot be made refuses: when
// the question times out, or its answer is an error or does not verify,
// no answer is taken (a revoked node cannot clear itself by failing the
// question). Only when no node serves the query group at all (no ledger
// node is up; api.ErrNoNode) is there no revocation anyone could hold
// against c, and it is cleared.
//
// A question that failed because its connection closed (asked on the
// connection made ahead, which joinAhead drops when it closed while the
// plan was read) says nothing of the revocations: it is asked again,
// once, on the invocation's own connection.
func (a *app) revokedSigner(c *trust.Credential) error {
	rt := &a.replies
	a.askRevocationsNow(func(rt *replyTrust) bool {
		if rt.asked {
			return false
		}
		rt.asked = true
		return true
	})
	<-rt.answeredChan()
	a.askRevocationsNow(func(rt *replyTrust) bool {
		if rt.askedAgain || !errors.Is(rt.askErr, nats.ErrConnectionClosed) {
			return false
		}
		rt.askedAgain = true
		return true
	})
	<-rt.answeredChan()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return api.JudgeRevoked(rt.revoked, rt.askErr, c)
}

// askRevocationsNow asks the revocations on the invocation's connection
// and waits for the answer when ask, called under rt.mu once every
// earlier question was answered, says to (and marks it asked).
func (a *app) askRevocationsNow(ask func(rt *replyTrust) bool) {
	rt := &a.replies
	rt.mu.Lock()
	if rt.answered != nil {
		ch := rt.answered
		rt.mu.Unlock()
		<-ch
		rt.mu.Lock()
	}
	if !ask(rt) {
		rt.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	rt.answered = ch
	rt.mu.Unlock()
	nc, err := a.conn()
	a.answerRevocations(nc, err, ch)
}

// answeredChan is the channel of the question last asked.
func (rt *replyTrust) answeredChan() chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.answered
}

// answerRevocations asks the revocations over nc (unless connecting
// failed with connErr), sets the answer and closes answered, the channel
// the checks waiting for this question wait on.
func (a *app) answerRevocations(nc *nats.Conn, connErr error, answered chan struct{}) {
	rt := &a.replies
	var revs api.RevokedSet
	err := connErr
	if err == nil {
		revs, err = a.askRevocations(nc)
	}
	rt.mu.Lock()
	rt.revoked, rt.askErr = revs, err
	rt.mu.Unlock()
	close(answered)
}

// prefetchRevocations asks the revocations in the background, now, for
// an invocation that will check a signed answer soon (a write waits for
// the ledger's outcome): the question then travels with the others
// before the publish instead of after the outcome's answer. A no-op when
// there is no credentials file to check answers with, or when they were
// asked already. close waits for the question.
func (a *app) prefetchRevocations() {
	if t, err := a.answerTrust(); t == nil || err != nil {
		return
	}
	nc, err := a.conn()
	if err != nil {
		return
	}
	a.prefetchRevocationsOn(nc)
}

// prefetchRevocationsOn is prefetchRevocations over nc, a connection
// being made ahead (dialAhead) that a.conn does not hold yet.
func (a *app) prefetchRevocationsOn(nc *nats.Conn) {
	if t, err := a.answerTrust(); t == nil || err != nil {
		return
	}
	rt := &a.replies
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.asked {
		return
	}
	rt.asked = true
	ch := make(chan struct{})
	rt.answered = ch
	go a.answerRevocations(nc, nil, ch)
}

// askRevocations reads revocations.list, its own signer judged by the
// list it reads (api.AskRevoked).
func (a *app) askRevocations(nc *nats.Conn) (api.RevokedSet, error) {
	return api.AskRevoked(a.context(), api.NewClient(nc, a.timeout), a.replies.trust)
}

// newClient is the query client of this invocation over nc: answers
// checked by answerTrust.
func (a *app) newClient(nc *nats.Conn, timeout time.Duration) (*api.Client, error) {
	c := api.NewClient(nc, timeout)
	t, err := a.answerTrust()
	if err != nil {
		return nil, err
	}
	if t != nil {
		c = c.WithTrust(t)
	}
	return c, nil
}
