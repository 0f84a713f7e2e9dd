package node

import (
	"context"
	"time"
)

// drainPoll is how often the node looks whether its executor began to
// drain.
const drainPoll = 200 * time.Millisecond

// announceDrain announces in gossip that the node drains once its
// executor has read a node.drain for it (roles/executor honours it: it
// starts nothing more, and once nothing runs agentd stops, leaving the
// gossip group). The leader takes drains from the ledger; the
// announcement is for the live view (nodes.list), where it also covers a
// drain that a restarted process honours again.
func (n *Node) announceDrain(ctx context.Context) {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for !n.exec.Stats().Draining {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	if err := n.gossip.SetDraining(ctx, true); err != nil && ctx.Err() == nil {
		n.log.Warn("announce draining in gossip", "err", err)
	}
}
