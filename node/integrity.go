package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
)

// RebuildRemedy is what an operator does about a damaged ledger; the
// CORRUPT reason, the refused queries and the log all name it.
const RebuildRemedy = "stop agentd and start it once with --rebuild-ledger: the damaged ledger is moved aside (kept, not deleted) and rebuilt from the events stream, or copied from a peer ledger node"

// ledgerIntegrity is a ledger node's verdict on its ledger: set once when
// the start-up chain check or Pebble finds the ledger damaged. From then on
// the node serves nothing of the ledger and folds nothing onto it, until
// an operator rebuilds it (RebuildLedger) and restarts the node.
type ledgerIntegrity struct {
	state health.State
	mu    sync.Mutex
	err   error
	// store is the ledger that passed the start-up check: Pebble may still
	// find damage in it.
	store *ledger.Store
}

func (li *ledgerIntegrity) checked(st *ledger.Store) {
	li.mu.Lock()
	li.store = st
	li.mu.Unlock()
}

func (li *ledgerIntegrity) fail(err error) {
	li.mu.Lock()
	first := li.err == nil
	if first {
		li.err = err
	}
	li.mu.Unlock()
	if first {
		li.state.Set(err)
	}
}

func (li *ledgerIntegrity) get() error {
	li.mu.Lock()
	defer li.mu.Unlock()
	return li.err
}

// found returns the verdict, or the damage Pebble found in the checked
// store since.
func (li *ledgerIntegrity) found() (verdict, damage error) {
	li.mu.Lock()
	defer li.mu.Unlock()
	if li.err != nil || li.store == nil {
		return li.err, nil
	}
	return nil, li.store.Corruption()
}

// ledgerDamage returns why the node's ledger is not served, or nil: the
// verdict of the start-up check, or damage Pebble reported since.
func (n *Node) ledgerDamage() error {
	verdict, damage := n.integrity.found()
	if damage != nil {
		n.ledgerCorrupt(damage)
		return n.integrity.get()
	}
	return verdict
}

// ledgerCorrupt records that the ledger is damaged (once) and says so.
func (n *Node) ledgerCorrupt(err error) {
	if n.integrity.get() != nil {
		return
	}
	dir := filepath.Join(n.cfg.Data, "ledger")
	n.log.Error("ledger damaged: not served, nothing folded onto it", "dir", dir, "err", err, "remedy", RebuildRemedy)
	n.integrity.fail(fmt.Errorf("ledger %s is damaged (%w); it is not served: %s", dir, err, RebuildRemedy))
}

// onLedgerFatal is the follower's OnFatal: damage found while folding
// leaves the node up and not ready (CORRUPT); any other failure to commit
// stops it.
func (n *Node) onLedgerFatal(err error) {
	if errors.Is(err, ledger.ErrCorrupt) {
		n.ledgerCorrupt(err)
		return
	}
	n.fail(err)
}

// checkLedger runs the start-up chain check (ledger.Store.CheckChain: the
// records after the verified checkpoint, in full) on st.
// It returns st when the ledger is sound; otherwise it closes st, records
// the damage and returns nil, and the node starts without serving or
// folding the ledger. Errors other than damage are returned.
func (n *Node) checkLedger(ctx context.Context, st *ledger.Store) (*ledger.Store, error) {
	start := time.Now()
	rep, err := st.CheckChain(ctx)
	switch {
	case errors.Is(err, ledger.ErrCorrupt):
		n.ledgerCorrupt(err)
	case err != nil:
		return nil, errors.Join(fmt.Errorf("node: %w", err), st.Close())
	case !rep.OK:
		n.ledgerCorrupt(fmt.Errorf("%w: %s", ledger.ErrCorrupt, rep.Err))
	default:
		n.log.Info("ledger chain checked", "from_checkpoint", rep.From, "checked", rep.Checked, "took", time.Since(start).Round(time.Millisecond))
		n.integrity.checked(st)
		return st, nil
	}
	if err := st.Close(); err != nil {
		n.log.Warn("close the damaged ledger", "err", err)
	}
	return nil, nil
}

// integrityEvery is how often a running ledger node checks the records
// appended since its verified checkpoint, moving it forward, so that a
// start after a crash has few records to check before it serves.
const integrityEvery = 5 * time.Minute

// watchIntegrity re-hashes the ledger below the verified checkpoint
// (ledger.Store.Relink) once, in the background after start (about 2.4 s
// for 1M records: restarts stay fast), then checks the records appended
// since the checkpoint every integrityEvery. A finding makes the ledger
// damaged (not served, nothing more folded: Append refuses).
func (n *Node) watchIntegrity(ctx context.Context, st *ledger.Store) {
	check := func(what string, f func(context.Context) (ledger.ChainReport, error)) bool {
		start := time.Now()
		rep, err := f(ctx)
		switch {
		case ctx.Err() != nil:
			return false
		case errors.Is(err, ledger.ErrCorrupt):
			n.ledgerCorrupt(err)
			return false
		case err != nil:
			n.log.Warn("ledger check", "check", what, "err", err)
		case !rep.OK:
			n.ledgerCorrupt(fmt.Errorf("%w: %s", ledger.ErrCorrupt, rep.Err))
			return false
		default:
			n.log.Debug("ledger check", "check", what, "relinked", rep.Linked, "checked", rep.Checked, "took", time.Since(start).Round(time.Millisecond))
		}
		// The check read the history once: its blocks would fill the
		// block cache with records live work does not read again.
		st.DropCache()
		return true
	}
	if !check("relink", st.Relink) {
		return
	}
	t := time.NewTicker(integrityEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n.ledgerDamage() != nil || !check("chain", st.CheckChain) {
				return
			}
		}
	}
}

// IntegrityCheck is the readiness check of the ledger's integrity: it
// fails, blocking, with alarm CORRUPT while the ledger is damaged (a record
// that does not match its chain at start, or files Pebble cannot read).
// It passes on a node without a ledger.
func (n *Node) IntegrityCheck() health.Check {
	return health.Check{
		Name:     health.CheckIntegrity,
		Blocking: true,
		Alarm:    event.AlarmCorrupt,
		Probe: func(ctx context.Context) error {
			if err := n.ledgerDamage(); err != nil {
				return err
			}
			return n.integrity.state.Probe(ctx)
		},
		Changed: n.integrity.state.Changed,
	}
}

// guard refuses a ledger query while the ledger is damaged, with the
// remedy as the hint.
func guard[Req, Resp any](n *Node, h func(context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) {
		if err := n.ledgerDamage(); err != nil {
			var zero Resp
			return zero, api.WithHint(fmt.Errorf("node %s: %w", n.cfg.Name, err), "agentd --rebuild-ledger --data "+n.cfg.Data)
		}
		return h(ctx, req)
	}
}

// RebuildLedger moves the ledger of the data directory data aside, to
// DATA/ledger.damaged-<UTC time>, kept for inspection, so that the next
// start rebuilds it: from the events stream, or copied from a peer ledger
// node when the stream no longer holds the whole history (node/bootstrap).
// That start refuses the rebuild, and puts the old ledger back, when the
// stream and the peers hold less than the old ledger folded
// (ErrRebuildRefused): a rebuild never replaces a ledger by a shorter one.
// It holds the data directory's lock while it moves, and returns where the
// old ledger went ("" when there was none).
func RebuildLedger(data string, now time.Time) (string, error) {
	lock, err := lockDataDir(data)
	if err != nil {
		return "", err
	}
	defer lock.release()
	dir := filepath.Join(data, "ledger")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("node: rebuild ledger: %w", err)
	}
	aside := dir + ".damaged-" + now.UTC().Format("20060102T150405Z")
	for i := 2; ; i++ { // one already moved aside this second
		if _, err := os.Stat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s.damaged-%s-%d", dir, now.UTC().Format("20060102T150405Z"), i)
	}
	// What the ledger folded is kept with it: the start that rebuilds
	// refuses a rebuild that would reach less (checkRebuild).
	m := rebuildMark{Aside: aside}
	m.Applied, m.Records, m.Known = readLedgerHead(dir)
	if err := writeRebuildMark(data, m); err != nil {
		return "", fmt.Errorf("node: rebuild ledger: %w", err)
	}
	if err := os.Rename(dir, aside); err != nil {
		return "", fmt.Errorf("node: rebuild ledger: move %s aside: %w", dir, err)
	}
	if err := syncDir(data); err != nil {
		return "", fmt.Errorf("node: rebuild ledger: %w", err)
	}
	return aside, nil
}
