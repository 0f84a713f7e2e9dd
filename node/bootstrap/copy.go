package bootstrap

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
)

// errRefused marks a copy that does not verify: its peer is not asked
// again.
var errRefused = errors.New("bootstrap: copy refused")

// pipeDepth is how many writes of the pull (bufio chunks of up to 64 KiB)
// may wait for the import: about a page.
const pipeDepth = 16

// errImportStopped ends the pipe's writer when the import stopped first.
var errImportStopped = errors.New("bootstrap: import stopped")

// copyFrom copies peer p's ledger into cfg.Dir+copySuffix and verifies it:
// nil leaves a verified copy there (closed); any error leaves nothing.
func (b *booter) copyFrom(ctx context.Context, p api.LedgerHead) (err error) {
	if err := b.agree(ctx, p); err != nil {
		return err
	}
	dir := b.cfg.Dir + copySuffix
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("bootstrap: remove an old copy: %w", err)
	}
	defer func() {
		if err != nil {
			if rerr := os.RemoveAll(dir); rerr != nil {
				b.log.Warn("removing a refused ledger copy", "dir", dir, "err", rerr)
			}
		}
	}()
	log := b.log.With("peer", p.Node)
	log.Info("copying a peer's ledger", "peer_head", p.Seq, "peer_applied_stream_seq", p.Applied, "dir", dir)
	start := time.Now()
	st, err := b.pullAndImport(ctx, p.Node, dir, log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bootstrap: close the copy: %w", cerr)
		}
	}()
	seq, _ := st.Head()
	log.Info("verifying the copy: chain and every signature", "records", seq, "copied_in", time.Since(start).Round(time.Millisecond))
	if err := b.check(st, p.Node); err != nil {
		return err
	}
	took := time.Since(start)
	log.Info("ledger copied from a peer and verified", "records", seq, "applied_stream_seq", st.AppliedStreamSeq(),
		"took", took.Round(time.Millisecond), "records_per_second", rate(seq, took))
	return nil
}

// pullAndImport streams the peer's export pages through a pipe into
// ledger.Import in dir.
func (b *booter) pullAndImport(ctx context.Context, peer, dir string, log *slog.Logger) (*ledger.Store, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := newPipe(pipeDepth)
	pulled := make(chan error, 1)
	go func() {
		err := b.pull(ctx, peer, p, log)
		p.CloseWrite(err) // nil: the importer reads io.EOF
		pulled <- err
	}()
	st, err := ledger.Import(dir, p, b.cfg.Ledger)
	p.CloseRead(errImportStopped) // unblocks the writer if the import stopped first
	pullErr := <-pulled
	switch {
	case pullErr != nil && !errors.Is(pullErr, errImportStopped):
		if st != nil {
			err = errors.Join(err, st.Close())
		}
		return nil, fmt.Errorf("bootstrap: read %s's export: %w", peer, errors.Join(pullErr, err))
	case errors.Is(err, ledger.ErrSync):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: %s's export does not import: %w", errRefused, peer, err)
	}
	return st, nil
}

// pull writes the peer's export, read from that one node page by page, to
// w, logging progress.
func (b *booter) pull(ctx context.Context, peer string, w io.Writer, log *slog.Logger) error {
	start, last := time.Now(), time.Now()
	return b.cfg.Client.At(peer).Export(ctx, w, func(n, head uint64) {
		if time.Since(last) < progressEvery {
			return
		}
		last = time.Now()
		log.Info("copying a peer's ledger", "records", n, "of", head, "records_per_second", rate(n, time.Since(start)))
	})
}

// check verifies the copy in st: chain, signatures, stream coverage; it
// must reach past the hole and pass through the local head.
func (b *booter) check(st *ledger.Store, peer string) error {
	rep, err := st.Verify(b.cfg.Verifier)
	if err != nil {
		return fmt.Errorf("bootstrap: verify the copy: %w", err)
	}
	if !rep.OK {
		return fmt.Errorf("%w: %s's ledger does not verify at record %d: %s", errRefused, peer, rep.FirstBadSeq, rep.Err)
	}
	if applied := st.AppliedStreamSeq(); applied < b.holeTo {
		return fmt.Errorf("%w: %s's ledger ends at stream seq %d, before the stream's first message %d", errRefused, peer, applied, b.holeTo+1)
	}
	if b.seq == 0 {
		return nil
	}
	rec, err := st.Get(b.seq)
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("%w: %s's ledger has fewer records than the %d here", errRefused, peer, b.seq)
	}
	if err != nil {
		return fmt.Errorf("bootstrap: read the copy at %d: %w", b.seq, err)
	}
	if rec.Hash != b.hash {
		return b.diverged(peer, hex.EncodeToString(b.hash[:]), hex.EncodeToString(rec.Hash[:]))
	}
	return nil
}

// rate is n per second over d.
func rate(n uint64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}
