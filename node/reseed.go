package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/bootstrap"
)

// eventsFirstSeq is where a ledger node creates an absent AGENTIC_EVENTS
// stream (bus.StreamConfig.EventsFirstSeq): the stream sequence after the
// last one its ledger applied, read from the ledger's head (or after a
// peer ledger node's that folded further), or 1 for a node without a
// ledger yet. The stream is the transport, the ledger the
// record: a stream deleted while the node was down (or whose store was
// lost) comes back continuing the ledger, with nothing republished — the
// ledger keeps every event it folded, the follower resumes where it
// stopped, and no ledger.gap is recorded, since no message the ledger
// lacks was lost. A ledger that cannot be read here (damaged, or mid-swap
// and not recoverable) stops the start with the reason: creating the
// stream at 1 would make that ledger unusable later.
func (n *Node) eventsFirstSeq(ctx context.Context) (uint64, error) {
	first, err := n.localFirstSeq()
	if err != nil || first <= 1 {
		return first, err
	}
	// Other ledger nodes may have folded further (this one was down
	// longer): the stream continues after the furthest, and this node
	// copies what it lacks from that peer (node/bootstrap) rather than
	// the peer finding the stream behind its ledger. Nodes that do not
	// answer within peerHeadsWait are not waited for.
	heads, _ := api.NewClient(n.conn.NC, 0).LedgerHeads(ctx, peerHeadsWait)
	for _, h := range heads {
		if h.Node != n.cfg.Name && h.Applied+1 > first {
			n.log.Warn("a peer ledger node folded the events stream further than this one: the stream continues after it", "peer", h.Node, "peer_applied_stream_seq", h.Applied)
			first = h.Applied + 1
		}
	}
	return first, nil
}

// peerHeadsWait is how long eventsFirstSeq collects the other ledger
// nodes' heads.
const peerHeadsWait = time.Second

// localFirstSeq is eventsFirstSeq from this node's ledger alone (and the
// ledger moved aside for a rebuild, if any).
func (n *Node) localFirstSeq() (uint64, error) {
	dir := filepath.Join(n.cfg.Data, "ledger")
	logger := n.log.With("component", "bootstrap")
	if err := bootstrap.Recover(dir, logger); err != nil {
		return 0, fmt.Errorf("node: the ledger in %s: %w", dir, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return n.asideFirstSeq(), nil
	} else if err != nil {
		return 0, fmt.Errorf("node: the ledger in %s: %w", dir, err)
	}
	st, err := ledger.Open(dir, ledger.Options{Logger: n.log.With("component", "ledger")})
	if errors.Is(err, ledger.ErrCorrupt) {
		// The node starts not ready, alarm CORRUPT (openLedger); its
		// ledger is replaced or repaired before it folds anything.
		n.log.Error("the events stream is absent and the ledger is damaged: the stream is created at sequence 1", "err", err)
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("node: read the ledger's head in %s to recreate the events stream after it: %w (to start the stream from 1 and keep this ledger aside, move %s away)", dir, err, dir)
	}
	applied := st.AppliedStreamSeq()
	if err := st.Close(); err != nil {
		return 0, fmt.Errorf("node: close the ledger in %s: %w", dir, err)
	}
	// A ledger moved aside for a rebuild still holds what it folded: the
	// stream continues after it (and the rebuild, finding the stream
	// short, puts it back: checkRebuild).
	applied = max(applied, n.asideFirstSeq()-1)
	if applied > 0 {
		n.log.Warn("the events stream is absent while this ledger folded it up to a sequence: recreating it continuing after the ledger's head; nothing is republished, the ledger keeps every event",
			"applied_stream_seq", applied, "first_seq", applied+1)
	}
	return applied + 1, nil
}

// asideFirstSeq is the stream sequence after the one the ledger moved
// aside by RebuildLedger folded, when it is still there (1 otherwise).
func (n *Node) asideFirstSeq() uint64 {
	m, ok, err := readRebuildMark(n.cfg.Data)
	if err != nil || !ok || !m.Known {
		return 1
	}
	if _, err := os.Stat(m.Aside); err != nil {
		return 1
	}
	return m.Applied + 1
}
