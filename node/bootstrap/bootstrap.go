// Package bootstrap gives a ledger node a ledger it can follow the events
// stream from. The stream is a transport buffer with limits (30 days or
// 4 GiB by default); a ledger node started after the stream dropped its
// first messages, or down longer than the stream keeps, cannot fold what
// the stream lost. Open then copies the ledger of a peer ledger node over
// the query API (its ledger.export pages, from that one node), verifies
// every record of the copy, and swaps it in, so that the follower resumes
// from the copy's applied stream sequence instead of recording a
// ledger.gap.
//
// Invariants:
//
//  1. A copy is trusted only as far as it verifies: ledger.Import
//     recomputes its chain, and ledger.Store.Verify re-verifies every
//     accepted record against its signed message with the node's own
//     verifier and checks that no stream message is missing without a gap
//     record. A copy that fails is refused, and its peer is not asked again
//     during this start. Ledger-local records (event.rejected, ledger.gap)
//     carry no signature: in them the copy is the peer's word.
//  2. A ledger with records is never overwritten by a chain that disagrees
//     with it: the peer's hash at the local head must be the local head's
//     hash (asked before the copy, checked again on the copy), or Open
//     fails with ErrDiverged and an operator decides.
//  3. The swap is crash-safe. The copy is imported into DIR.bootstrap and
//     verified; then DIR moves to DIR.replaced and the copy to DIR, each
//     rename synced in the parent directory. Recover, which every Open runs
//     first, finishes or undoes an interrupted swap and removes an
//     unfinished copy, so a crash leaves the old ledger or the verified
//     copy, never a mix.
//  4. Start is never blocked for ever: when no peer has what the stream
//     lost within Config.Timeout, Open returns the node's own ledger,
//     logs an error with the remedy, and the follower records the hole as
//     ledger.gap, as without bootstrap.
//  5. Memory is bounded: pages go through a pipe of a few chunks (the
//     next page is fetched while the last is imported) into
//     ledger.Import, which commits every few thousand records.
//  6. A node never asks itself: its own query API does not serve yet when
//     Open runs, and Config.Self is skipped.
//
// The copy carries no snapshot: the roles fold the copied records when the
// follower restores. A snapshot is derived state without a signature;
// taking a peer's would trust the peer beyond what verifies, while the fold
// of verified records gives the same state. That fold runs once, at the
// first start after a copy; snapshots are taken as usual from then on.
//
// Usage, on a node, before the follower starts:
//
//	st, err := bootstrap.Open(ctx, bootstrap.Config{
//		Dir: filepath.Join(data, "ledger"), Self: name,
//		Client: api.NewClient(nc, 0), JS: js, Verifier: v,
//		Timeout: 30 * time.Second,
//	})
package bootstrap

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrDiverged is returned by Open when the node's ledger and a peer's
// disagree at the same position: one of them folded another stream. The
// node must not start on either without an operator.
var ErrDiverged = errors.New("bootstrap: the ledger disagrees with a peer's")

// Defaults of Config.
const (
	DefaultGatherWait = time.Second
	DefaultRetry      = time.Second
	// progressEvery is how often a copy in progress is logged.
	progressEvery = 5 * time.Second
)

// Config is what Open needs.
type Config struct {
	// Dir is the ledger directory (DATA/ledger).
	Dir string
	// Self is this node's name: never asked.
	Self string
	// Client asks the peers over the bus.
	Client *api.Client
	// JS reads the events stream's bounds.
	JS jetstream.JetStream
	// Verifier verifies the copy (the node's own).
	Verifier *envelope.Verifier
	// Timeout is how long Open looks for a peer that has what the stream
	// lost; 0 never copies (the hole becomes a ledger.gap).
	Timeout time.Duration
	// GatherWait is how long each look collects the peers' heads
	// (DefaultGatherWait if 0), and Retry the pause between looks
	// (DefaultRetry if 0).
	GatherWait, Retry time.Duration
	// Ledger opens the stores.
	Ledger ledger.Options
	// Logger receives progress and problems; nil: slog.Default().
	Logger *slog.Logger
}

func (c Config) filled() Config {
	if c.GatherWait <= 0 {
		c.GatherWait = DefaultGatherWait
	}
	if c.Retry <= 0 {
		c.Retry = DefaultRetry
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Open recovers an interrupted swap, opens the ledger in cfg.Dir and,
// when the events stream no longer holds the messages after the ledger's
// applied stream sequence, replaces it by a verified copy of a peer's
// ledger (see the package doc). It returns the store the follower must
// follow the stream from.
func Open(ctx context.Context, cfg Config) (*ledger.Store, error) {
	cfg = cfg.filled()
	if err := Recover(cfg.Dir, cfg.Logger); err != nil {
		return nil, err
	}
	st, err := ledger.Open(cfg.Dir, cfg.Ledger)
	if err != nil {
		return nil, err
	}
	copied, err := (&booter{cfg: cfg, log: cfg.Logger, local: st}).run(ctx)
	switch {
	case err != nil:
		return nil, errors.Join(err, st.Close())
	case !copied:
		return st, nil
	}
	if err := st.Close(); err != nil {
		return nil, fmt.Errorf("bootstrap: close the ledger to replace it: %w", err)
	}
	if err := swap(cfg.Dir, cfg.Logger); err != nil {
		return nil, err
	}
	return ledger.Open(cfg.Dir, cfg.Ledger)
}

// Hole returns the stream seqs [from, to] that a ledger which applied the
// stream up to applied cannot read from a stream whose messages run from
// first to last, and false when there are none (or when the stream is
// younger than the ledger, which the follower refuses on its own).
func Hole(applied, first, last uint64) (from, to uint64, ok bool) {
	if last < applied || first <= applied+1 {
		return 0, 0, false
	}
	return applied + 1, first - 1, true
}

// booter runs one bootstrap.
type booter struct {
	cfg   Config
	log   *slog.Logger
	local *ledger.Store
	// holeTo is the last stream seq the stream lost: a copy must reach it.
	holeTo uint64
	// seq and hash are the local head.
	seq  uint64
	hash [32]byte
}

// run copies a peer's ledger into cfg.Dir+copySuffix when the stream has a
// hole for the local ledger; it reports whether a verified copy is there.
func (b *booter) run(ctx context.Context) (bool, error) {
	first, last, err := streamBounds(ctx, b.cfg.JS)
	if err != nil {
		return false, err
	}
	applied := b.local.AppliedStreamSeq()
	from, to, ok := Hole(applied, first, last)
	if !ok {
		return false, nil
	}
	b.holeTo = to
	b.seq, b.hash = b.local.Head()
	log := b.log.With("applied_stream_seq", applied, "stream_first_seq", first, "missing_from", from, "missing_to", to)
	if b.cfg.Timeout <= 0 {
		log.Error("the events stream no longer holds messages this ledger has not folded, and ledger bootstrap is off: they will be recorded as a ledger.gap",
			"remedy", "set ledger.bootstrap_timeout (--ledger-bootstrap-timeout) to copy a peer's verified ledger instead")
		return false, nil
	}
	log.Info("the events stream no longer holds messages this ledger has not folded: copying a peer's verified ledger", "timeout", b.cfg.Timeout)
	return b.search(ctx, log)
}

// search asks for the peers' heads until one peer's copy is verified, the
// local ledger is found to diverge, or the timeout passes.
func (b *booter) search(ctx context.Context, log *slog.Logger) (bool, error) {
	deadline := time.Now().Add(b.cfg.Timeout)
	refused := map[string]bool{}
	for {
		heads, err := b.cfg.Client.LedgerHeads(ctx, b.cfg.GatherWait)
		if err != nil {
			log.Debug("asking the ledger nodes for their heads", "err", err)
		}
		for _, p := range b.candidates(heads) {
			if refused[p.Node] {
				continue
			}
			err := b.copyFrom(ctx, p)
			switch {
			case err == nil:
				return true, nil
			case errors.Is(err, ErrDiverged) || errors.Is(err, ledger.ErrSync) || ctx.Err() != nil:
				return false, err
			case errors.Is(err, errRefused):
				refused[p.Node] = true
				log.Error("a peer's ledger was refused: not asked again", "peer", p.Node, "err", err)
			default:
				log.Warn("copying a peer's ledger failed; trying again", "peer", p.Node, "err", err)
			}
		}
		wait := min(b.cfg.Retry, time.Until(deadline))
		if wait <= 0 {
			log.Error("no peer ledger node had what the events stream lost: the hole will be recorded as a ledger.gap",
				"timeout", b.cfg.Timeout, "refused", strings.Join(slices.Sorted(maps.Keys(refused)), ","),
				"remedy", "start a ledger node that holds the whole history (or raise ledger.bootstrap_timeout), then restart this node with its ledger directory moved aside")
			return false, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("bootstrap: looking for a peer: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// candidates are the peers whose ledgers reach past the hole, most
// advanced first.
func (b *booter) candidates(heads []api.LedgerHead) []api.LedgerHead {
	var out []api.LedgerHead
	applied := b.local.AppliedStreamSeq()
	for _, h := range heads {
		if h.Node != "" && h.Node != b.cfg.Self && h.Applied >= b.holeTo && h.Applied > applied {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(x, y api.LedgerHead) int {
		if x.Applied != y.Applied {
			return cmp.Compare(y.Applied, x.Applied)
		}
		return strings.Compare(x.Node, y.Node)
	})
	return out
}

// agree checks, before anything is copied, that the peer's chain passes
// through the local head.
func (b *booter) agree(ctx context.Context, p api.LedgerHead) error {
	if b.seq == 0 {
		return nil
	}
	if p.Seq < b.seq {
		return fmt.Errorf("%w: peer %s has %d records, fewer than the %d here, yet says it folded more of the stream", errRefused, p.Node, p.Seq, b.seq)
	}
	h, err := b.cfg.Client.At(p.Node).LedgerHead(ctx, b.seq)
	if err != nil {
		return fmt.Errorf("bootstrap: ask %s for its hash at record %d: %w", p.Node, b.seq, err)
	}
	if want := hex.EncodeToString(b.hash[:]); h.AtHash != want {
		return b.diverged(p.Node, want, h.AtHash)
	}
	return nil
}

func (b *booter) diverged(peer, local, theirs string) error {
	err := fmt.Errorf("%w: at record %d this ledger (%s) has hash %s, node %s has %s; one of them folded another stream. Compare the ledger nodes with 'agentctl ledger verify --all'; to take the peer's ledger, move %s aside and start again; to keep this one and record the hole as a ledger.gap, start with ledger.bootstrap_timeout 0",
		ErrDiverged, b.seq, b.cfg.Dir, local, peer, theirs, b.cfg.Dir)
	b.log.Error("ledger diverges from a peer's: not replaced", "peer", peer, "seq", b.seq, "hash", local, "peer_hash", theirs)
	return err
}

// streamBounds reads the events stream's first and last sequence.
func streamBounds(ctx context.Context, js jetstream.JetStream) (first, last uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, bus.EventsStream)
	if err != nil {
		return 0, 0, fmt.Errorf("bootstrap: stream %s: %w", bus.EventsStream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("bootstrap: stream %s info: %w", bus.EventsStream, err)
	}
	return info.State.FirstSeq, info.State.LastSeq, nil
}
