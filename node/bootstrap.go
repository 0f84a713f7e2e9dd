package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/bootstrap"
)

// openLedger opens the node's ledger; when the events stream no longer
// holds messages the ledger has not folded, it first replaces the ledger
// by a verified copy of a peer's (node/bootstrap). It runs before the
// node's own query API serves, so the node never asks itself. Then it
// checks the chain from the verified checkpoint (checkLedger; the records
// below it are re-hashed in the background, watchIntegrity). A damaged
// ledger (Pebble cannot read it, or the check fails) gives a nil store and
// no error: the node starts, not ready, alarm CORRUPT.
func (n *Node) openLedger(ctx context.Context) (*ledger.Store, error) {
	st, err := bootstrap.Open(ctx, bootstrap.Config{
		Dir:      filepath.Join(n.cfg.Data, "ledger"),
		Self:     n.cfg.Name,
		Client:   n.apiClient(0),
		JS:       n.conn.JS,
		Verifier: n.verifier,
		Timeout:  n.cfg.Ledger.BootstrapTimeout,
		Ledger:   ledger.Options{Logger: n.log.With("component", "ledger")},
		Logger:   n.log.With("component", "bootstrap"),
	})
	if errors.Is(err, ledger.ErrCorrupt) {
		n.ledgerCorrupt(err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if st, err = n.checkRebuild(ctx, st); err != nil {
		return nil, err
	}
	return n.checkLedger(ctx, st)
}
