package node

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/agentic-dev/agentic/node/api"
)

// handleLedgerHead serves ledger.head on the queue group, on the node's
// own subject and on the subject every ledger node answers (what
// `agentctl ledger verify --all` and a bootstrapping peer gather).
func (n *Node) handleLedgerHead(s *api.Server) {
	api.HandleTyped(s, api.MethodLedgerHead, guard(n, n.ledgerHead))
	s.Broadcast(api.MethodLedgerHead)
}

// ledgerHead answers the ledger's head and, when asked, its chain hash at
// an earlier record.
func (n *Node) ledgerHead(ctx context.Context, req api.HeadRequest) (api.LedgerHead, error) {
	// Applied first: the head read after it has folded at least as much.
	applied := n.store.AppliedStreamSeq()
	seq, hash := n.store.Head()
	h := api.LedgerHead{Node: n.cfg.Name, Seq: seq, Hash: hex.EncodeToString(hash[:]), Applied: applied}
	if req.At == 0 {
		return h, nil
	}
	if req.At > seq {
		return api.LedgerHead{}, api.WithHint(fmt.Errorf("%w: record %d is beyond the ledger head %d of node %s", api.ErrBadRequest, req.At, seq, n.cfg.Name),
			"ask for a record at or below the head (the lowest head of the nodes compared)")
	}
	rec, err := n.store.Get(req.At)
	if err != nil {
		return api.LedgerHead{}, fmt.Errorf("node: ledger hash at %d: %w", req.At, err)
	}
	h.At, h.AtHash = req.At, hex.EncodeToString(rec.Hash[:])
	return h, nil
}
