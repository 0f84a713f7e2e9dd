// Package backup is a node's data directory copied while the node runs,
// and put back on another machine.
//
// A backup is a directory:
//
//	BACKUP.json          the Manifest (written last: a directory without
//	                     it is not a backup)
//	FORMAT, keys         the data dir's files (root key, node key and
//	                     credential, operator credentials), copied
//	ledger/              Pebble checkpoints of the ledger, the outbox and
//	outbox/              the executor's local state (each consistent as of
//	executor/            its own moment, see the order below)
//	streams/NAME.snap    JetStream snapshots of the agentic streams (with
//	                     their consumers) and of the artifact bucket's
//	                     stream (unless left out), on a node whose
//	                     embedded nats-server is the whole of NATS
//
// The node takes them in an order that loses nothing acknowledged
// (node.Node.Backup): the outbox stops publishing; the ledger is copied
// (so it never runs ahead of the stream copy); the streams; the executor
// state (after the streams, so an attempt it records as finished has its
// event in the stream copy or the outbox copy); the outbox (holding every
// event of this node not in the stream copy); then the outbox publishes
// again, and the artifact bucket is copied last: an artifact is stored
// before its artifact.stored is queued, so every artifact an event of the
// copies records is in the bucket's copy.
//
// Restore makes a data directory of a backup on the machine that will run
// the node: it copies the files and restores the streams into the new
// JetStream store. A node started on it republishes its outbox, folds the
// stream from where the ledger copy ends, and carries on.
package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
)

// ManifestFile names the manifest in a backup directory.
const ManifestFile = "BACKUP.json"

// StreamsDir is the backup's directory of stream snapshots.
const StreamsDir = "streams"

// Version is the backup layout this code writes and reads.
const Version = 1

// Manifest says what a backup holds.
type Manifest struct {
	// Version is the backup layout (Version).
	Version int `json:"version"`
	// Node is the node backed up.
	Node string `json:"node"`
	// Time is when the backup was taken (its start).
	Time time.Time `json:"time"`
	// DataFormat is the data dir layout (node.DataFormat).
	DataFormat int `json:"data_format"`
	// LedgerSeq and LedgerApplied are the ledger copy's head and the
	// stream seq it folded up to (0: no ledger on this node).
	LedgerSeq     uint64 `json:"ledger_seq,omitempty"`
	LedgerApplied uint64 `json:"ledger_applied,omitempty"`
	// Stores lists the Pebble copies (ledger, outbox, executor).
	Stores []string `json:"stores"`
	// Files lists the data dir files copied (keys, FORMAT).
	Files []string `json:"files"`
	// Streams are the stream snapshots; StreamsOmitted says why there are
	// none (NATS runs outside this node, or as a cluster: the streams
	// live on in their replicas).
	Streams        []Stream `json:"streams,omitempty"`
	StreamsOmitted string   `json:"streams_omitted,omitempty"`
	// ArtifactsOmitted says why the artifact bucket's stream is not among
	// Streams although the others are (left out on request).
	ArtifactsOmitted string `json:"artifacts_omitted,omitempty"`
	// Took is how long the backup took.
	Took time.Duration `json:"took"`
}

// ReadManifest reads the manifest of the backup in dir.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("backup: %s holds no %s: not a finished backup", dir, ManifestFile)
	}
	if err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("backup: %s: %w", ManifestFile, err)
	}
	if m.Version != Version {
		return m, fmt.Errorf("backup: %s has backup layout %d, this agentd reads %d", dir, m.Version, Version)
	}
	return m, nil
}

// WriteManifest writes m into dir, synced: the last step of a backup.
func WriteManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := writeFile(filepath.Join(dir, ManifestFile), b); err != nil {
		return err
	}
	return SyncDir(dir)
}

// Restore makes the data directory data (absent or empty) from the backup
// in from: it copies the stores and files and, when the backup holds
// streams, starts a nats-server on data/nats just long enough to restore
// them. The node is then started on data as usual.
func Restore(ctx context.Context, from, data string, log *slog.Logger) (Manifest, error) {
	if log == nil {
		log = slog.Default()
	}
	m, err := ReadManifest(from)
	if err != nil {
		return m, err
	}
	if entries, err := os.ReadDir(data); err == nil && len(entries) > 0 {
		return m, fmt.Errorf("backup: restore into %s: the directory is not empty; restore into a new data directory", data)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("backup: restore into %s: %w", data, err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	for _, name := range m.Files {
		if err := copyFile(filepath.Join(from, name), filepath.Join(data, name)); err != nil {
			return m, err
		}
	}
	for _, name := range m.Stores {
		if err := CopyTree(filepath.Join(from, name), filepath.Join(data, name)); err != nil {
			return m, err
		}
	}
	if len(m.Streams) > 0 {
		if err := restoreStreams(ctx, from, data, m, log); err != nil {
			return m, err
		}
	}
	if err := SyncDir(data); err != nil {
		return m, err
	}
	log.Info("backup restored", "from", from, "data", data, "node", m.Node, "taken", m.Time, "ledger_seq", m.LedgerSeq, "streams", len(m.Streams))
	return m, nil
}

func restoreStreams(ctx context.Context, from, data string, m Manifest, log *slog.Logger) error {
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: filepath.Join(data, "nats"), ServerName: m.Node, Logger: log.With("component", "nats")})
	if err != nil {
		return fmt.Errorf("backup: nats-server on %s: %w", data, err)
	}
	defer srv.Shutdown()
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: srv, Name: "agentd restore"})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer conn.Close()
	for _, s := range m.Streams {
		if err := RestoreStream(ctx, conn.NC, s, filepath.Join(from, StreamsDir, s.File)); err != nil {
			return err
		}
		log.Info("stream restored", "stream", s.Name, "messages", s.Messages, "last_seq", s.LastSeq)
	}
	return nil
}

// CopyTree copies the regular files under src into dst (created), synced.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			return nil
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
}

// CopyFile copies the regular file src to dst (which must not exist),
// synced.
func CopyFile(src, dst string) error { return copyFile(src, dst) }

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("backup: copy %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("backup: copy %s: %w", src, err)
	}
	return out.Close()
}

func writeFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("backup: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("backup: write %s: %w", path, err)
	}
	return f.Close()
}

// SyncDir syncs a directory, so the entries made in it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	return nil
}
