package executor

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// An attempt whose policy version is cached is judged again (invariant
// 14) while its start is being recorded, not after the record's fsync:
// the fsync is held until the judgement began. The process still starts
// only once the record is synced (invariant 1), and runs once. One whose
// version must be fetched is judged after the record, as before.
func TestJudgedWhileRecording(t *testing.T) {
	h := newHarness(t)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	ref := led.refs[1]
	judging := make(chan string, 16)
	var armed atomic.Bool
	held := make(chan bool, 1) // whether the judgement began while the record's fsync was held
	var released atomic.Int64  // when the held fsync returned, ns
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		isSync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if isSync && strings.HasSuffix(op.Path, ".log") && armed.CompareAndSwap(true, false) {
			began := false
			for !began {
				select {
				case s := <-judging:
					began = s == "s"
				case <-time.After(3 * time.Second):
					held <- false
					released.Store(time.Now().UnixNano())
					return nil
				}
			}
			held <- true
			released.Store(time.Now().UnixNano())
		}
		return nil
	}))
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) {
		c.Safety.Policies = APIPolicies(led.client)
		c.stateFS = fs
		c.judging = func(s event.Step) { judging <- s.ID }
	})
	// The first step fetches the policy version: judged after its record.
	h.assignJudged("exec-1", "r1", shellStep("first", "touch "+h.marker("first")), ref, "")
	if f := result(t, rec, "first"); f.Status != event.TaskSucceeded {
		t.Fatalf("first step: %+v", f)
	}
	armed.Store(true)
	h.assignJudged("exec-1", "r1", shellStep("s", "date +%s%N > "+h.marker("s")), ref, "")
	if f := result(t, rec, "s"); f.Status != event.TaskSucceeded {
		t.Fatalf("step: %+v", f)
	}
	if !<-held {
		t.Fatal("the record's fsync was held 3s and the judgement did not begin meanwhile: it waits for the record")
	}
	b, err := os.ReadFile(h.marker("s"))
	if err != nil {
		t.Fatal(err)
	}
	ran, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("marker %q: %v", b, err)
	}
	if ran < released.Load() {
		t.Errorf("the step ran %s before its start record was synced", time.Duration(released.Load()-ran))
	}
	// A refusal judged beside the record is reported as before: no
	// task.started, the step not run.
	h.assignJudged("exec-1", "r1", shellStep("denied", "touch "+h.marker("denied")+"; shred --version"), ref, "")
	h.refusedWith(t, rec, "denied", "policy version 1 denies it: rule no-shred")
}
