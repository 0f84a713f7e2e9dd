package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/backup"
)

// BackupOptions are the choices of a backup.
type BackupOptions struct {
	// NoArtifacts leaves the artifact bucket out (it may be large).
	NoArtifacts bool
}

// partialSuffix marks a backup being written: it becomes the named
// directory only once complete.
const partialSuffix = ".partial"

// Backup writes an online, consistent backup of the node's data directory
// into out (absolute, not existing) on this node's machine, while the node
// runs. Its layout and the order that loses nothing acknowledged are in
// package backup. The backup is written into out.partial and renamed to
// out once its manifest is written; a failed backup leaves out.partial.
func (n *Node) Backup(ctx context.Context, out string, o BackupOptions) (backup.Manifest, error) {
	m := backup.Manifest{Version: backup.Version, Node: n.cfg.Name, Time: time.Now().UTC(), DataFormat: DataFormat}
	if !filepath.IsAbs(out) {
		return m, fmt.Errorf("%w: backup directory %q is not an absolute path", api.ErrBadRequest, out)
	}
	out = filepath.Clean(out)
	if rel, err := filepath.Rel(n.cfg.Data, out); err == nil && !strings.HasPrefix(rel, "..") {
		return m, fmt.Errorf("%w: backup directory %s lies inside the data directory %s", api.ErrBadRequest, out, n.cfg.Data)
	}
	for _, p := range []string{out, out + partialSuffix} {
		if _, err := os.Stat(p); err == nil {
			return m, fmt.Errorf("%w: %s exists: back up into a new directory", api.ErrBadRequest, p)
		}
	}
	if n.store == nil && n.needsLedger() {
		return m, fmt.Errorf("node: backup: %w", errors.Join(errors.New("the ledger is not served"), n.integrity.get()))
	}
	n.backupMu.Lock()
	defer n.backupMu.Unlock()
	tmp := out + partialSuffix
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return m, fmt.Errorf("node: backup: %w", err)
	}
	start := time.Now()
	// Nothing of this node reaches the stream until the outbox is copied:
	// every event is in the stream copy or in the outbox copy.
	n.outbox.Stop()
	defer n.outbox.Start(n.conn.JS)
	if n.store != nil {
		if err := n.store.Checkpoint(filepath.Join(tmp, "ledger")); err != nil {
			return m, fmt.Errorf("node: backup: %w", err)
		}
		m.Stores = append(m.Stores, "ledger")
		// The copy's head: reading it back is the proof it opens.
		if err := readCopyHead(filepath.Join(tmp, "ledger"), &m); err != nil {
			return m, err
		}
	}
	if err := n.backupStreams(ctx, tmp, &m); err != nil {
		return m, err
	}
	if n.exec != nil {
		if err := n.exec.Checkpoint(filepath.Join(tmp, "executor")); err != nil {
			return m, fmt.Errorf("node: backup: %w", err)
		}
		m.Stores = append(m.Stores, "executor")
	}
	if err := n.outbox.Checkpoint(filepath.Join(tmp, "outbox")); err != nil {
		return m, fmt.Errorf("node: backup: %w", err)
	}
	m.Stores = append(m.Stores, "outbox")
	// The node's events flow again while the artifact bucket — perhaps
	// large — is copied: every artifact an event of the copies records
	// was stored before that event was queued, so it is in this copy.
	n.outbox.Start(n.conn.JS)
	if err := n.backupArtifacts(ctx, tmp, &m, o); err != nil {
		return m, err
	}
	if err := n.backupFiles(tmp, &m); err != nil {
		return m, err
	}
	m.Took = time.Since(start)
	if err := backup.WriteManifest(tmp, m); err != nil {
		return m, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return m, fmt.Errorf("node: backup: %w", err)
	}
	if err := backup.SyncDir(filepath.Dir(out)); err != nil {
		return m, err
	}
	n.log.Info("backup written", "dir", out, "ledger_seq", m.LedgerSeq, "streams", len(m.Streams), "took", m.Took.Round(time.Millisecond))
	return m, nil
}

// backupStreams snapshots the agentic streams when this node's embedded
// nats-server is all of NATS; otherwise the streams live on in NATS (a
// cluster's replicas, an external server) and are not the node's to copy.
func (n *Node) backupStreams(ctx context.Context, tmp string, m *backup.Manifest) error {
	switch {
	case n.embedded == nil:
		m.StreamsOmitted = "NATS runs outside this node: back up its JetStream store there"
		return nil
	case n.cfg.NATSClusterListen != "" || len(n.cfg.NATSRoutes) > 0:
		m.StreamsOmitted = "the embedded nats-server is one of a cluster: the streams live on in its replicas"
		return nil
	}
	dir := filepath.Join(tmp, backup.StreamsDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("node: backup: %w", err)
	}
	for _, name := range []string{bus.EventsStream, bus.LogsStream} {
		s, err := backup.SnapshotStream(ctx, n.conn.NC, name, filepath.Join(dir, name+".snap"))
		if err != nil {
			return err
		}
		s.File = name + ".snap"
		m.Streams = append(m.Streams, s)
	}
	return nil
}

// backupArtifacts snapshots the artifact bucket's stream beside the
// other streams, unless they are not copied or o leaves it out.
func (n *Node) backupArtifacts(ctx context.Context, tmp string, m *backup.Manifest, o BackupOptions) error {
	switch {
	case m.StreamsOmitted != "":
		return nil
	case o.NoArtifacts:
		m.ArtifactsOmitted = "left out on request (--no-artifacts): copy the stream " + artifact.BucketStream + " from NATS to keep them"
		return nil
	}
	const file = artifact.BucketStream + ".snap"
	s, err := backup.SnapshotStream(ctx, n.conn.NC, artifact.BucketStream, filepath.Join(tmp, backup.StreamsDir, file))
	if err != nil {
		return err
	}
	s.File = file
	m.Streams = append(m.Streams, s)
	return nil
}

// backupFiles copies the data dir's own files: FORMAT, the keys and
// credentials (not LOCK).
func (n *Node) backupFiles(tmp string, m *backup.Manifest) error {
	entries, err := os.ReadDir(n.cfg.Data)
	if err != nil {
		return fmt.Errorf("node: backup: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || name == LockFile || strings.HasSuffix(name, ".tmp") {
			continue
		}
		if err := backup.CopyFile(filepath.Join(n.cfg.Data, name), filepath.Join(tmp, name)); err != nil {
			return err
		}
		m.Files = append(m.Files, name)
	}
	return nil
}

// readCopyHead opens the ledger copy in dir and notes its head.
func readCopyHead(dir string, m *backup.Manifest) error {
	st, err := ledger.Open(dir, ledger.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("node: backup: the ledger copy does not open: %w", err)
	}
	m.LedgerSeq, _ = st.Head()
	m.LedgerApplied = st.AppliedStreamSeq()
	return st.Close()
}

// backupHandler serves node.backup.
func (n *Node) backupHandler(ctx context.Context, req api.BackupRequest) (api.BackupResult, error) {
	m, err := n.Backup(ctx, req.Out, BackupOptions{NoArtifacts: req.NoArtifacts})
	if err != nil {
		return api.BackupResult{}, err
	}
	r := api.BackupResult{Node: m.Node, Dir: filepath.Clean(req.Out), LedgerSeq: m.LedgerSeq, LedgerApplied: m.LedgerApplied,
		Stores: m.Stores, Files: m.Files, StreamsOmitted: m.StreamsOmitted, ArtifactsOmitted: m.ArtifactsOmitted, Took: m.Took}
	for _, s := range m.Streams {
		r.Streams = append(r.Streams, api.BackupStream{Name: s.Name, Messages: s.Messages, LastSeq: s.LastSeq})
	}
	return r, nil
}
