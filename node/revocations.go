package node

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
)

// revocationsList answers every credential.revoked the ledger accepted,
// in stream order (revocations.list).
func (n *Node) revocationsList(ctx context.Context, _ struct{}) ([]api.Revocation, error) {
	out := []api.Revocation{}
	for rec, err := range n.store.ScanType(event.CredentialRevoked, 1) {
		if err != nil {
			return nil, fmt.Errorf("node: revocations.list: %w", err)
		}
		ev := rec.Event
		var d event.CredentialRevokedData
		if err := ev.Decode(&d); err != nil {
			// The ledger accepts none such; an older build's might.
			n.log.Warn("credential.revoked record without a valid payload skipped", "seq", ev.Seq, "err", err)
			continue
		}
		out = append(out, api.Revocation{CredentialRevokedData: d, Seq: ev.Seq, StreamSeq: ev.StreamSeq, By: ev.Node, Event: ev.ID, Time: ev.Time})
	}
	return out, nil
}

// credentialsList answers the credentials of one identity the ledger saw
// signing (credentials.list).
func (n *Node) credentialsList(ctx context.Context, req api.CredentialsRequest) ([]api.CredentialSeen, error) {
	if (req.Kind != trust.KindNode && req.Kind != trust.KindOperator) || req.ID == "" {
		return nil, api.WithHint(fmt.Errorf("%w: credentials.list of kind %q and id %q", api.ErrBadRequest, req.Kind, req.ID),
			"ask for a kind, node or operator, and an id")
	}
	seen, err := n.store.Credentials(req.Kind, req.ID)
	if err != nil {
		return nil, fmt.Errorf("node: credentials.list: %w", err)
	}
	out := make([]api.CredentialSeen, len(seen))
	for i, c := range seen {
		out[i] = api.CredentialSeen{Kind: c.Kind, ID: c.ID, Key: c.Key, NATSUser: c.NATSUser, Issued: c.Issued, Expires: c.Expires, FirstSeq: c.FirstSeq}
	}
	return out, nil
}
