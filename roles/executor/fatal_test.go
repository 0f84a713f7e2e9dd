package executor

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/internal/pebblelog"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A failed fsync of the executor's local state — before a step starts or
// after it finished — calls OnFatal once with ErrSync, and the executor
// takes no new work.
func TestFailedSyncIsFatal(t *testing.T) {
	for _, tc := range []struct {
		name string
		// armOnStart arms the fault when the step's task.started is
		// emitted (MarkFinished fails) instead of before the assignment
		// (MarkStarted fails).
		armOnStart bool
	}{
		{name: "mark started", armOnStart: false},
		{name: "mark finished", armOnStart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var armed atomic.Bool
			errDisk := errors.New("injected fsync failure")
			fs := pebblelog.FailingSyncFS(vfs.Default, &armed, errDisk)
			rec := &recorder{}
			if tc.armOnStart {
				rec.onDraft = func(d event.Draft) {
					if d.Type == event.TaskStarted {
						armed.Store(true)
					}
				}
			}
			fatals := make(chan error, 4)
			ex := h.start("n1", t.TempDir(), rec, func(c *Config) {
				c.stateFS = fs
				c.OnFatal = func(err error) { fatals <- err }
			})
			if !tc.armOnStart {
				armed.Store(true)
			}
			h.assign("n1", "r1", "a", 0, "")
			var err error
			select {
			case err = <-fatals:
			case <-time.After(10 * time.Second):
				t.Fatal("OnFatal not called within 10s of a failed fsync")
			}
			if !errors.Is(err, localstate.ErrSync) || !errors.Is(err, errDisk) {
				t.Fatalf("OnFatal(%v), want ErrSync wrapping the disk error", err)
			}
			if tc.armOnStart {
				// The step ran and its result was emitted before the
				// failed MarkFinished.
				if !h.ran("a") || len(rec.finished("a")) != 1 {
					t.Fatalf("a ran = %v, finished reports = %d; want it run and reported", h.ran("a"), len(rec.finished("a")))
				}
			} else if h.ran("a") || rec.started("a") {
				t.Fatal("a was started although its start could not be recorded")
			}
			armed.Store(false) // the disk "works" again: the executor must still refuse work
			// A noop step: it needs no local state, so only the halt keeps
			// it from running.
			h.assignNoop("n1", "r1", "b", 0)
			bSeq := h.lastSeq()
			// Either b was delivered (and Stop waits for its handling) or
			// the consumer has stopped pulling and b stays on the server.
			poll.Eventually(t, 10*time.Second, "b delivered, or left with no pull request open", func() bool {
				info := h.consumerInfo("n1")
				return info.Delivered.Stream >= bSeq || (info.NumPending > 0 && info.NumWaiting == 0)
			})
			if err := h.stop(ex, 10*time.Second); err != nil {
				t.Logf("stop after a failed sync: %v", err)
			}
			if rec.started("b") {
				t.Fatal("b was run after the executor halted")
			}
			select {
			case err := <-fatals:
				t.Fatalf("OnFatal called a second time: %v", err)
			default:
			}
		})
	}
}
