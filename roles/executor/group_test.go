package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/pebblelog"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// walSyncs counts the fsyncs of the write-ahead log of a Pebble store on
// the returned file system: one per synced commit (or group of them).
func walSyncs(n *atomic.Int64) vfs.FS {
	return errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		isSync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if isSync && strings.HasSuffix(op.Path, ".log") {
			n.Add(1)
		}
		return nil
	}))
}

// assignAll publishes, in one message, a task.assigned to node for each
// step of run (attempt 1) with its script.
func (h *harness) assignAll(node, run string, scripts map[string]string) {
	h.t.Helper()
	var drafts []event.Draft
	for step, script := range scripts {
		d := event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{
			Attempt: 1, Node: node, Step: event.Step{ID: step, Kind: event.KindShell, Run: script},
		})
		d.Target = node
		drafts = append(drafts, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, h.js, h.orch, drafts...); err != nil {
		h.t.Fatalf("publish %d assignments: %v", len(drafts), err)
	}
}

// recordedScript is a step that succeeds only if its attempt is recorded
// as started in the write-ahead log of the executor's local state when it
// runs, and then leaves its marker.
func (h *harness) recordedScript(stateDir, run, step string) string {
	rec := fmt.Sprintf(`"run":%q,"step":%q,"attempt":1,"state":"started"`, run, step)
	return fmt.Sprintf("grep -qF '%s' %s/*.log && touch %s", rec, stateDir, h.marker(step))
}

// The shell steps of one assignment message are recorded started in one
// commit before any of their processes starts (each process finds its own
// record in the log), and their results are emitted and recorded finished
// in groups: many attempts, few fsyncs and few Emits.
func TestAttemptsGroupCommitted(t *testing.T) {
	const n = 8
	h := newHarness(t)
	stateDir := t.TempDir()
	var syncs atomic.Int64
	steps := make([]string, n)
	for i := range steps {
		steps[i] = fmt.Sprintf("g%d", i)
	}
	allRan := func() bool {
		for _, s := range steps {
			if !h.ran(s) {
				return false
			}
		}
		return true
	}
	// The first Emit with results waits until every process has ended and
	// the other results are queued behind it, so that they form one group.
	var exp atomic.Pointer[Executor]
	var emits struct {
		sync.Mutex
		withFinished, withTask int
	}
	rec := &recorder{}
	emitter := &countingEmitter{rec: rec, count: func(drafts []event.Draft) {
		var task bool
		fins := 0
		for _, d := range drafts {
			task = task || d.Type == event.TaskStarted || d.Type == event.TaskFinished
			if d.Type == event.TaskFinished {
				fins++
			}
		}
		emits.Lock()
		first := fins > 0 && emits.withFinished == 0
		if task {
			emits.withTask++
		}
		if fins > 0 {
			emits.withFinished++
		}
		emits.Unlock()
		if first {
			r := exp.Load().report
			if poll.Wait(10*time.Second, allRan) != nil || poll.Wait(10*time.Second, func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.mu.finishes == n-fins
			}) != nil {
				t.Error("the steps did not all end and queue their results behind the first group")
			}
		}
	}}
	ex := h.startWith("n1", stateDir, emitter, func(c *Config) {
		c.Slots = n
		c.stateFS = walSyncs(&syncs)
	})
	exp.Store(ex)
	before := syncs.Load()
	scripts := map[string]string{}
	for _, s := range steps {
		scripts[s] = h.recordedScript(stateDir, "r1", s)
	}
	h.assignAll("n1", "r1", scripts)
	poll.Eventually(t, 20*time.Second, "every step reported", func() bool {
		for _, s := range steps {
			if len(rec.finished(s)) != 1 {
				return false
			}
		}
		return true
	})
	for _, s := range steps {
		if f := rec.finished(s)[0]; f.Status != event.TaskSucceeded {
			t.Errorf("%s: %s (%s), want succeeded: its process did not find its start record", s, f.Status, f.Error)
		}
	}
	poll.Eventually(t, 10*time.Second, "every attempt recorded finished", func() bool {
		left, err := ex.state.Unfinished()
		return err == nil && len(left) == 0
	})
	// One commit for the starts, one per group of results.
	if got := syncs.Load() - before; got > 3 {
		t.Errorf("%d attempts took %d log fsyncs of the local state, want at most 3", n, got)
	}
	emits.Lock()
	defer emits.Unlock()
	if emits.withFinished > 2 || emits.withTask >= n {
		t.Errorf("task events of %d attempts in %d Emits (%d with results), want fewer than %d (at most 2 with results)", n, emits.withTask, emits.withFinished, n)
	}
}

// A failed fsync of the commit that records a group of starts fails every
// attempt of the group: none of their processes starts, nothing is
// reported, the message stays unacknowledged and the node is told to stop
// (OnFatal) once.
func TestFailedGroupCommitStartsNothing(t *testing.T) {
	const n = 4
	h := newHarness(t)
	var armed atomic.Bool
	errDisk := errors.New("injected fsync failure")
	fatals := make(chan error, 4)
	rec := &recorder{}
	ex := h.start("n1", t.TempDir(), rec, func(c *Config) {
		c.Slots = n
		c.stateFS = pebblelog.FailingSyncFS(vfs.Default, &armed, errDisk)
		c.OnFatal = func(err error) { fatals <- err }
	})
	scripts := map[string]string{}
	for i := range n {
		s := fmt.Sprintf("g%d", i)
		scripts[s] = "touch " + h.marker(s)
	}
	armed.Store(true)
	h.assignAll("n1", "r1", scripts)
	select {
	case err := <-fatals:
		if !errors.Is(err, localstate.ErrSync) || !errors.Is(err, errDisk) {
			t.Fatalf("OnFatal(%v), want ErrSync wrapping the disk error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnFatal not called within 10s of a failed fsync")
	}
	armed.Store(false)
	poll.Eventually(t, 10*time.Second, "slots released", func() bool { return ex.Stats().Running == 0 })
	if info := h.consumerInfo("n1"); info.NumAckPending != 1 {
		t.Errorf("assignment message: %d unacknowledged, want 1", info.NumAckPending)
	}
	if err := h.stop(ex, 10*time.Second); err != nil {
		t.Logf("stop after a failed sync: %v", err)
	}
	for s := range scripts {
		if h.ran(s) || rec.started(s) || len(rec.finished(s)) > 0 {
			t.Errorf("%s ran or was reported although its start could not be recorded", s)
		}
	}
	select {
	case err := <-fatals:
		t.Fatalf("OnFatal called a second time: %v", err)
	default:
	}
}

// countingEmitter passes drafts to rec and counts each Emit call.
type countingEmitter struct {
	rec   *recorder
	count func([]event.Draft)
}

func (c *countingEmitter) Emit(ctx context.Context, drafts ...event.Draft) error {
	c.count(drafts)
	return c.rec.Emit(ctx, drafts...)
}
