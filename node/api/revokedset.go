package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
)

// RevokedSet is the ledger's revocations as a client judges signers by
// them: by identity (kind, id), the newest Before.
type RevokedSet map[[2]string]time.Time

// Check is nil when s does not revoke c (c was issued after its
// identity's newest revocation, or it has none), else why it does.
func (s RevokedSet) Check(c *trust.Credential) error {
	if before, ok := s[[2]string{c.Kind, c.ID}]; ok && !c.Issued.After(before) {
		return fmt.Errorf("revoked: the ledger revoked the credentials of %s %s issued at or before %s",
			c.Kind, c.ID, before.UTC().Format(time.RFC3339))
	}
	return nil
}

// AskRevoked reads revocations.list of the query group through a client
// whose answers verifier v verifies, and judges the answer's own signer
// by the list it gave: a node the list revokes is refused.
func AskRevoked(ctx context.Context, c *Client, t *Trust) (RevokedSet, error) {
	var signer *trust.Credential
	own := &Trust{Verifier: t.Verifier, LearnRoots: t.LearnRoots, Now: t.Now,
		Revoked: func(c *trust.Credential) error { signer = c; return nil }}
	revs, err := c.WithTrust(own).Revocations(ctx)
	if err != nil {
		return nil, err
	}
	set := make(RevokedSet, len(revs))
	for _, r := range revs {
		k := [2]string{r.Kind, r.ID}
		if cur, ok := set[k]; !ok || r.Before.After(cur) {
			set[k] = r.Before
		}
	}
	if signer != nil && set.Check(signer) != nil {
		return nil, fmt.Errorf("node %s answered the revocations with its own among them", signer.ID)
	}
	return set, nil
}

// JudgeRevoked is the verdict on a signer c given the revocations asked
// (set, or askErr when asking failed). A check that cannot be made
// refuses, so a revoked node cannot clear itself by failing the
// question (a timeout, an error answer, a list that revokes its own
// signer). Only ErrNoNode — nobody serves the query group, no ledger node
// is up — clears c: there is then no revocation anyone could hold
// against it.
func JudgeRevoked(set RevokedSet, askErr error, c *trust.Credential) error {
	switch {
	case errors.Is(askErr, ErrNoNode):
		return nil
	case askErr != nil:
		return fmt.Errorf("cannot be checked against the ledger's revocations (%v), so its answer is not taken", askErr)
	}
	return set.Check(c)
}

// AskedRevocations judges signers by the revocations of the query group
// for a node that keeps no ledger of its own: asked at the first check
// and again once they are older than MaxAge, one question at a time; a
// question that failed is asked again at the next check.
type AskedRevocations struct {
	// Client asks the query group; Trust verifies the list's answer.
	Client *Client
	Trust  *Trust
	// MaxAge is how long an answer is used (0: asked at every check).
	MaxAge time.Duration

	mu  sync.Mutex
	at  time.Time  // when set was answered
	set RevokedSet // nil: not asked, or the last question failed
}

// Check is Trust.Revoked for signers of answers: nil when the
// revocations clear c, else why its answer is refused (JudgeRevoked).
func (a *AskedRevocations) Check(c *trust.Credential) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.set == nil || time.Since(a.at) >= a.MaxAge {
		set, err := AskRevoked(context.Background(), a.Client, a.Trust)
		if err != nil {
			// Not kept: the next check asks again.
			a.set = nil
			return JudgeRevoked(nil, err, c)
		}
		a.set, a.at = set, time.Now()
	}
	return JudgeRevoked(a.set, nil, c)
}
