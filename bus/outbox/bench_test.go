package outbox

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkEmit measures Emit of one task.finished draft (redaction,
// checks, encoding and a synced commit) on an in-memory file system, so
// that the outbox's CPU is measured, not the disk. Nothing publishes.
func BenchmarkEmit(b *testing.B) {
	root, _ := trust.NewRoot()
	id, err := trust.NewIdentity(root, "n1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ob, err := open("outbox", vfs.NewMem(), id, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer ob.Close()
	ctx := context.Background()
	now := time.Now().UTC()
	d := event.MustDraft(event.TaskFinished, event.NewID(), event.TaskFinishedData{Step: "s1", Attempt: 1, Node: "n1", Status: event.TaskSucceeded,
		Started: now, Duration: event.Duration(3 * time.Millisecond), Cwd: "/work", CommandHash: "b5bb9d8014a0f9b1"})
	cpu := ledgertest.CPUPerOp(b)
	for b.Loop() {
		if err := ob.Emit(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	cpu()
}
