package node

import (
	"context"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/health"
)

// maxRenewCheck is how often, at most, the node looks at its credential.
const maxRenewCheck = time.Minute

// watchCredential keeps the node's credential and NATS user fresh while
// it runs, without a restart. Where root.key is, it renews them when
// trust.RenewDue says (a third of their lifetime, or 30 days, before
// expiry). Elsewhere the root holder renews them into the data dir
// (agentctl node renew); either way, a credential of the node's key newer
// than the one it signs with is loaded and signs from then on, and the
// NATS user JWT is read again at the next connection (the server closes
// the connection when the old one expires).
func (n *Node) watchCredential(ctx context.Context) {
	cur := n.id
	n.cred.Store(cur)
	for {
		c, err := n.ownRoot().Inspect(cur.Credential)
		if err != nil {
			n.log.Error("the node's own credential does not verify; not renewing it", "err", err)
			return
		}
		every := min(maxRenewCheck, max(c.Expires.Sub(c.Issued)/10, 100*time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		// Only a credential of the root this node holds is renewed here:
		// one another root issued (a rotation) is renewed where that
		// root's key is.
		if n.root.CanIssue() && c.Issuer == n.root.KeyID() && trust.RenewDue(c.Issued, c.Expires, time.Now()) {
			// The credential and its NATS user JWT, as agentctl node
			// renew writes them elsewhere.
			if _, err := natsauth.RenewNode(n.cfg.Data, n.root, c.Expires.Sub(c.Issued)); err != nil {
				n.log.Error("cannot renew the node's credential", "err", err, "expires", c.Expires)
				continue
			}
		}
		// The data dir's roots are read again: a renewal by a new root
		// (agentctl node renew --root NEW_DIR) lists it there.
		root, err := trust.LoadRoot(n.cfg.Data)
		if err != nil {
			continue
		}
		next, err := trust.LoadIdentity(n.cfg.Data, root)
		if err != nil || next.Credential == cur.Credential || !next.Key.Equal(cur.Key) || next.ID != cur.ID {
			continue
		}
		n.outbox.SetIdentity(next)
		cur = next
		n.cred.Store(cur)
		// Present the new NATS user now rather than when the server
		// closes the old one's connection at its expiry.
		if err := n.conn.NC.ForceReconnect(); err != nil {
			n.log.Warn("cannot reconnect to NATS with the renewed user; the server will close the old one at its expiry", "err", err)
		}
		nc, _ := root.Verify(next.Credential, time.Now())
		if nc != nil {
			n.log.Info("credential renewed: signing with the new one", "expires", nc.Expires)
		}
	}
}

// credentialWarn bounds how long before its expiry the node's credential
// fails the credential check: a week, or a quarter of a shorter lifetime
// (after the renewal a node holding root.key makes at a third).
const credentialWarn = 7 * 24 * time.Hour

// credentialCheck (not blocking): the credential the node signs with is
// not expired and not about to expire. A node holding root.key renews it
// by itself; for the others the check says how to.
func (n *Node) credentialCheck() health.Check {
	return health.Check{Name: health.CheckCredential, Probe: func(context.Context) error {
		id := n.cred.Load()
		if id == nil {
			id = n.id
		}
		c, err := n.ownRoot().Inspect(id.Credential)
		if err != nil {
			return fmt.Errorf("the node's credential does not verify: %w", err)
		}
		if n.store != nil {
			for _, r := range n.store.Roots() {
				if r.KeyID == c.Issuer && r.RetiredStream != 0 {
					return fmt.Errorf("the node's credential was issued by root %s, which the ledger retired at stream seq %d: every ledger node refuses what it signs; enrol it again with the root that succeeds it: agentctl node renew %s --root NEW_ROOT_DIR --data DATA", c.Issuer, r.RetiredStream, c.ID)
				}
			}
		}
		left := time.Until(c.Expires)
		hint := "renew it where root.key is: agentctl node renew " + c.ID + " --root ROOT_DIR --data DATA"
		switch {
		case left <= 0:
			return fmt.Errorf("the node's credential expired at %s: %s", c.Expires.UTC().Format(time.RFC3339), hint)
		case left < min(credentialWarn, c.Expires.Sub(c.Issued)/4):
			return fmt.Errorf("the node's credential expires in %s (%s): %s", left.Round(time.Second), c.Expires.UTC().Format(time.RFC3339), hint)
		}
		return nil
	}}
}

// ownRoot is the roots the node's data dir trusts now (read again, so
// that a root a renewal added counts), or the root it started with.
func (n *Node) ownRoot() *trust.Root {
	if r, err := trust.LoadRoot(n.cfg.Data); err == nil {
		return r
	}
	return n.root
}

// identity is the identity the node signs with now: the renewed one once
// a renewal was loaded.
func (n *Node) identity() *trust.Identity {
	if id := n.cred.Load(); id != nil {
		return id
	}
	return n.id
}
