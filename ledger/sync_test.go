package ledger

import (
	"errors"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A commit whose WAL fsync fails is reported as ErrSync, the head does not
// move, and the store refuses every later Append (the node must stop).
func TestFailedSyncStopsAppends(t *testing.T) {
	var armed atomic.Bool
	errDisk := errors.New("injected fsync failure")
	fs := pebblelog.FailingSyncFS(vfs.Default, &armed, errDisk)
	st, err := Open(t.TempDir(), Options{FS: fs, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(seq uint64, id string) Message {
		return Message{StreamSeq: seq, Subject: "agentic.ev.task.started", Time: time.Unix(1, 0), EnvelopeID: id,
			Events: []event.Event{{ID: id, Type: event.TaskStarted, Node: "n1", Subject: "agentic.ev.task.started"}}}
	}
	if _, err := st.Append([]Message{msg(1, "a")}); err != nil {
		t.Fatal(err)
	}
	seq, hash := st.Head()
	armed.Store(true)
	_, err = st.Append([]Message{msg(2, "b")})
	if !errors.Is(err, ErrSync) || !errors.Is(err, errDisk) {
		t.Fatalf("Append with failing fsync = %v, want ErrSync wrapping the disk error", err)
	}
	if s2, h2 := st.Head(); s2 != seq || h2 != hash || st.AppliedStreamSeq() != 1 {
		t.Errorf("head moved after a failed commit: %d -> %d", seq, s2)
	}
	armed.Store(false)
	if _, err := st.Append([]Message{msg(2, "b")}); !errors.Is(err, ErrSync) {
		t.Errorf("Append after a failed commit = %v, want ErrSync", err)
	}
	// Pebble may itself refuse to close cleanly after a WAL failure; the
	// store must still release everything (goleak checks).
	_ = st.Close()
}

// noteIndexer is an Indexer that keeps nothing on disk but its snapshot.
type noteIndexer struct{ n int }

func (x *noteIndexer) Name() string                          { return "notes" }
func (x *noteIndexer) Version() uint32                       { return 1 }
func (x *noteIndexer) Index(*IndexWriter, IndexRecord) error { x.n++; return nil }
func (x *noteIndexer) Committed(error)                       {}
func (x *noteIndexer) Snapshot() ([]byte, error)             { return []byte{byte(x.n)}, nil }
func (x *noteIndexer) Restore([]byte) error                  { return nil }

// An index snapshot that meets a full disk (at Close) is an error
// wrapping ENOSPC, never a crash.
func TestIndexSnapshotOnAFullDisk(t *testing.T) {
	var armed atomic.Bool
	fs := pebblelog.FailingSyncFS(vfs.Default, &armed, syscall.ENOSPC)
	st, err := Open(t.TempDir(), Options{FS: fs, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AttachIndexer(&noteIndexer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append([]Message{{StreamSeq: 1, Subject: "agentic.ev.task.started", Time: time.Unix(1, 0), EnvelopeID: "a",
		Events: []event.Event{{ID: "a", Type: event.TaskStarted, Node: "n1", Subject: "agentic.ev.task.started"}}}}); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if err := st.Close(); !errors.Is(err, ErrSync) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Close writing the index snapshot on a full disk = %v, want ErrSync wrapping ENOSPC", err)
	}
}
