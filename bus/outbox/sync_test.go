package outbox

import (
	"context"
	"errors"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A failed fsync is never acknowledged: Emit reports ErrSync, the outbox
// records the fatal error (the node watches Err and stops), and every later
// Emit is refused.
func TestFailedSyncIsFatal(t *testing.T) {
	var armed atomic.Bool
	errDisk := errors.New("injected fsync failure")
	fs := pebblelog.FailingSyncFS(vfs.Default, &armed, errDisk)
	root, _ := trust.NewRoot()
	id, err := trust.NewIdentity(root, "n1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := open(t.TempDir(), fs, id, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := func() event.Draft { return event.MustDraft(event.TaskStarted, "r", event.TaskStartedData{Step: "a"}) }
	if err := ob.Emit(ctx, d()); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	err = ob.Emit(ctx, d())
	if !errors.Is(err, ErrSync) || !errors.Is(err, errDisk) {
		t.Fatalf("Emit on a failing disk = %v, want ErrSync wrapping the disk error", err)
	}
	if !errors.Is(ob.Err(), ErrSync) {
		t.Fatalf("Err() = %v, want ErrSync", ob.Err())
	}
	armed.Store(false)
	if err := ob.Emit(ctx, d()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Emit after a failed sync = %v, want ErrClosed", err)
	}
	if n := ob.Pending(); n != 1 {
		t.Fatalf("pending = %d, want only the event synced before the failure", n)
	}
	_ = ob.Close()
}
