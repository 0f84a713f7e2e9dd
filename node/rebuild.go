package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/ledger"
)

// rebuildMarkFile, in the data directory, says that the ledger was moved
// aside by RebuildLedger and not yet rebuilt: where it went and how far it
// had folded the events stream. The next start of a ledger node reads it
// (checkRebuild) and removes it once the rebuild is accepted or refused.
const rebuildMarkFile = "ledger.rebuild.json"

// rebuildMark is the content of rebuildMarkFile.
type rebuildMark struct {
	// Aside is where the ledger went.
	Aside string `json:"aside"`
	// Applied and Records are the moved ledger's applied stream sequence
	// and head; Known is false when it could not be read (then there is
	// nothing to compare a rebuild with).
	Applied uint64 `json:"applied_stream_seq"`
	Records uint64 `json:"records"`
	Known   bool   `json:"known"`
}

// ErrRebuildRefused is returned by Start when a ledger moved aside by
// RebuildLedger would be replaced by a shorter one: the events stream (and
// no peer's ledger) holds less than the moved ledger folded. The moved
// ledger is put back first.
var ErrRebuildRefused = errors.New("ledger rebuild refused")

// readLedgerHead reads how far the ledger in dir folded the stream, and its
// head; ok is false when it cannot be read.
func readLedgerHead(dir string) (applied, records uint64, ok bool) {
	st, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		return 0, 0, false
	}
	applied = st.AppliedStreamSeq()
	records, _ = st.Head()
	if err := st.Close(); err != nil {
		return 0, 0, false
	}
	return applied, records, true
}

// writeRebuildMark writes m to the data directory, durably.
func writeRebuildMark(data string, m rebuildMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	path := filepath.Join(data, rebuildMarkFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(data)
}

// readRebuildMark reads the data directory's rebuild mark; ok is false
// when there is none.
func readRebuildMark(data string) (m rebuildMark, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(data, rebuildMarkFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("node: read %s: %w", rebuildMarkFile, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, false, fmt.Errorf("node: %s in %s is not valid (%w): remove it to rebuild without comparing with the ledger moved aside", rebuildMarkFile, data, err)
	}
	return m, true, nil
}

// removeRebuildMark removes the rebuild mark, durably.
func removeRebuildMark(data string) error {
	if err := os.Remove(filepath.Join(data, rebuildMarkFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("node: remove %s: %w", rebuildMarkFile, err)
	}
	return syncDir(data)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// checkRebuild compares a rebuilt ledger st (just opened: empty, or a
// peer's verified copy) and the events stream with the ledger it replaces,
// when the last RebuildLedger left a mark. The rebuild can reach the
// copy's applied sequence, and the stream's last one when the stream
// continues the copy without a hole; if that is short of what the moved
// ledger folded, or a hole would drop messages the moved ledger had, the
// rebuild is refused: the new ledger is removed, the moved one put back,
// and ErrRebuildRefused says what to do. Accepted or refused, the mark is
// removed.
func (n *Node) checkRebuild(ctx context.Context, st *ledger.Store) (*ledger.Store, error) {
	m, ok, err := readRebuildMark(n.cfg.Data)
	if err != nil || !ok {
		return st, errors.Join(err)
	}
	if !m.Known {
		n.log.Warn("ledger rebuilt without a comparison: the ledger moved aside could not be read", "moved_to", m.Aside)
		return st, removeRebuildMark(n.cfg.Data)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	first, last, err := eventsBounds(sctx, n.conn)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("node: compare the ledger rebuild with the ledger moved aside: %w", err)
	}
	applied := st.AppliedStreamSeq()
	reach, hole := applied, first > applied+1
	if !hole {
		reach = max(applied, last)
	}
	if reach >= m.Applied && !(hole && applied < m.Applied) {
		n.log.Info("ledger rebuild accepted: the events stream and the copy reach what the ledger moved aside folded",
			"moved_applied_stream_seq", m.Applied, "copy_applied_stream_seq", applied, "stream_first_seq", first, "stream_last_seq", last)
		return st, removeRebuildMark(n.cfg.Data)
	}
	if _, err := os.Stat(m.Aside); err != nil {
		n.log.Error("ledger rebuild from a stream shorter than the ledger moved aside; that ledger is gone, so the rebuild goes ahead",
			"moved_to", m.Aside, "moved_applied_stream_seq", m.Applied, "stream_first_seq", first, "stream_last_seq", last, "err", err)
		return st, removeRebuildMark(n.cfg.Data)
	}
	dir := filepath.Join(n.cfg.Data, "ledger")
	if err := st.Close(); err != nil {
		return nil, fmt.Errorf("node: close the refused rebuild: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("node: remove the refused rebuild %s: %w", dir, err)
	}
	if err := os.Rename(m.Aside, dir); err != nil {
		return nil, fmt.Errorf("node: put the ledger back from %s: %w", m.Aside, err)
	}
	if err := syncDir(n.cfg.Data); err != nil {
		return nil, fmt.Errorf("node: put the ledger back: %w", err)
	}
	if err := removeRebuildMark(n.cfg.Data); err != nil {
		return nil, err
	}
	have := fmt.Sprintf("holds no message (its sequence is at %d)", last)
	if last >= first && first > 0 {
		have = fmt.Sprintf("holds sequences %d to %d", first, last)
	}
	return nil, fmt.Errorf("node: %w: the ledger moved aside folded the events stream up to sequence %d (%d records), but the stream %s and no peer ledger node had more; a rebuild would lose what the ledger holds. The ledger is back in %s, unchanged. "+
		"If the stream was deleted and made again empty, delete it (nats stream rm %s) and start agentd without --rebuild-ledger: a ledger node recreates it continuing after the ledger's head. "+
		"Otherwise bring the stream back (agentd --restore-from BACKUP) or start a ledger node that holds the whole history, then rebuild again. "+
		"To rebuild anyway and lose what the ledger holds, move %s aside yourself and start",
		ErrRebuildRefused, m.Applied, m.Records, have, dir, bus.EventsStream, dir)
}

// eventsBounds reads the events stream's first and last sequence.
func eventsBounds(ctx context.Context, conn *bus.Conn) (first, last uint64, err error) {
	s, err := conn.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s: %w", bus.EventsStream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s info: %w", bus.EventsStream, err)
	}
	return info.State.FirstSeq, info.State.LastSeq, nil
}
