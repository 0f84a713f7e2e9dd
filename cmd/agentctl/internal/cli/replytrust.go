package cli

import (
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
	revoked map[[2]string]time.Time
	askErr  error
	// answered is closed once revoked and askErr are set (asked is set
	// before): a check that comes while the question is out waits for it.
	answered chan struct{}
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

// revokedSigner says why c is revoked by the ledger's revocations, or "".
// The revocations are asked once, of whichever ledger node answers
// (prefetchRevocations may have asked already); the answer asking them is
// itself checked against them.
func (a *app) revokedSigner(c *trust.Credential) string {
	rt := &a.replies
	rt.mu.Lock()
	if !rt.asked {
		rt.asked = true
		rt.answered = make(chan struct{})
		rt.mu.Unlock()
		nc, err := a.conn()
		a.answerRevocations(nc, err)
	} else {
		rt.mu.Unlock()
	}
	<-rt.answered
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.askErr != nil {
		return ""
	}
	if before, ok := rt.revoked[[2]string{c.Kind, c.ID}]; ok && !c.Issued.After(before) {
		return fmt.Sprintf("the ledger revoked the credentials of %s %s issued at or before %s", c.Kind, c.ID, before.UTC().Format(time.RFC3339))
	}
	return ""
}

// answerRevocations asks the revocations over nc (unless connecting
// failed with connErr) and publishes the answer to the checks waiting on
// rt.answered (the caller set asked and made answered).
func (a *app) answerRevocations(nc *nats.Conn, connErr error) {
	rt := &a.replies
	var revs map[[2]string]time.Time
	err := connErr
	if err == nil {
		revs, err = a.askRevocations(nc)
	}
	rt.mu.Lock()
	rt.revoked, rt.askErr = revs, err
	rt.mu.Unlock()
	close(rt.answered)
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
	rt.answered = make(chan struct{})
	go a.answerRevocations(nc, nil)
}

// askRevocations reads revocations.list through a checked client whose
// own revocation check is deferred to the list it reads.
func (a *app) askRevocations(nc *nats.Conn) (map[[2]string]time.Time, error) {
	var signer *trust.Credential
	t := &api.Trust{Verifier: a.replies.trust.Verifier, LearnRoots: true,
		Revoked: func(c *trust.Credential) string { signer = c; return "" }}
	var revs []api.Revocation
	if err := api.NewClient(nc, a.timeout).WithTrust(t).Call(a.context(), api.MethodRevocationsList, struct{}{}, &revs); err != nil {
		return nil, err
	}
	out := make(map[[2]string]time.Time, len(revs))
	for _, r := range revs {
		k := [2]string{r.Kind, r.ID}
		if cur, ok := out[k]; !ok || r.Before.After(cur) {
			out[k] = r.Before
		}
	}
	if signer != nil {
		if before, ok := out[[2]string{signer.Kind, signer.ID}]; ok && !signer.Issued.After(before) {
			return nil, fmt.Errorf("node %s answered the revocations with its own among them", signer.ID)
		}
	}
	return out, nil
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
