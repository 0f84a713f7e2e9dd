package ledger

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// A commit whose WAL fsync fails is reported as ErrSync, the head does not
// move, and the store refuses every later Append (the node must stop).
func TestFailedSyncStopsAppends(t *testing.T) {
	var armed atomic.Bool
	errDisk := errors.New("injected fsync failure")
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		isSync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if armed.Load() && isSync && strings.HasSuffix(op.Path, ".log") {
			return errDisk
		}
		return nil
	}))
	st, err := Open(t.TempDir(), Options{fs: fs, Logger: discard()})
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
