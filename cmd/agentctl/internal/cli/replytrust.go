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
// The revocations are asked once, of whichever ledger node answers; the
// answer asking them is itself checked against them.
func (a *app) revokedSigner(c *trust.Credential) string {
	rt := &a.replies
	rt.mu.Lock()
	if !rt.asked {
		rt.asked = true
		rt.mu.Unlock()
		revs, err := a.askRevocations()
		rt.mu.Lock()
		rt.revoked, rt.askErr = revs, err
	}
	defer rt.mu.Unlock()
	if rt.askErr != nil {
		return ""
	}
	if before, ok := rt.revoked[[2]string{c.Kind, c.ID}]; ok && !c.Issued.After(before) {
		return fmt.Sprintf("the ledger revoked the credentials of %s %s issued at or before %s", c.Kind, c.ID, before.UTC().Format(time.RFC3339))
	}
	return ""
}

// askRevocations reads revocations.list through a checked client whose
// own revocation check is deferred to the list it reads.
func (a *app) askRevocations() (map[[2]string]time.Time, error) {
	nc, err := a.conn()
	if err != nil {
		return nil, err
	}
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
