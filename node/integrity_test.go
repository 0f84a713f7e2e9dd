package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// finishedSeq returns the position of run's run.finished in the closed
// ledger of data dir dir, and the head.
func finishedSeq(t *testing.T, dir, run string) (seq, head uint64) {
	t.Helper()
	st := ledgertest.OpenDir(t, filepath.Join(dir, "ledger"))
	defer st.Close()
	for rec, err := range st.ScanRun(run, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Event.Type == event.RunFinished {
			seq = rec.Event.Seq
		}
	}
	if seq == 0 {
		t.Fatalf("no run.finished for %s", run)
	}
	head, _ = st.Head()
	return seq, head
}

// assertCorrupt checks a node started on a damaged ledger: up, not ready
// with reason CORRUPT (within seconds), the integrity check failing with alarm CORRUPT, its
// run queries refused with the remedy, and nothing folded onto the ledger.
func assertCorrupt(t *testing.T, n *nodetest.Node, want string) {
	t.Helper()
	var err error
	// The records below the checkpoint are re-hashed in the background
	// after start: poll.
	_ = poll.Wait(30*time.Second, func() bool { err = n.Ready(); return err != nil && strings.Contains(err.Error(), "CORRUPT") })
	if err == nil || !strings.HasPrefix(err.Error(), health.CheckIntegrity+": "+string(event.AlarmCorrupt)+": ") || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--rebuild-ledger") {
		t.Fatalf("Ready() = %v, want CORRUPT naming %q and the remedy", err, want)
	}
	c := n.IntegrityCheck()
	if c.Name != health.CheckIntegrity || !c.Blocking || c.Alarm != event.AlarmCorrupt || c.Probe(context.Background()) == nil {
		t.Errorf("integrity check %s blocking=%v alarm=%s probe=%v, want a failing blocking CORRUPT check", c.Name, c.Blocking, c.Alarm, c.Probe(context.Background()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = n.API.RunsList(ctx, api.RunsListRequest{})
	if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(api.HintOf(err), "--rebuild-ledger") {
		t.Errorf("runs.list on a damaged ledger = %v (hint %q), want the damage and the remedy", err, api.HintOf(err))
	}
	if _, err := n.API.LedgerHead(ctx, 0); err == nil {
		t.Error("ledger.head answered from a damaged ledger")
	}
}

// A record rewritten behind the node's back (the run's outcome turned
// from succeeded to failed) is found at the next start: the node stays up,
// not ready, alarm CORRUPT; its queries refuse; a goal submitted meanwhile
// is not folded onto the damaged ledger. --rebuild-ledger moves the ledger
// aside and the node rebuilds it from the stream: ready, verified, the run
// succeeded again, and the goal submitted while it was damaged runs.
func TestRewrittenRecordThenRebuild(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	run := n.WaitRun(t, n.Submit(t, "mixed.yaml", mixedPlan), 30*time.Second).ID
	n.Stop(t)
	seq, head := finishedSeq(t, dir, run)
	ledgertest.RewriteRecord(t, filepath.Join(dir, "ledger"), seq, func(ev *event.Event) {
		ev.Data = []byte(strings.Replace(string(ev.Data), `"succeeded"`, `"failed"`, 1))
	})

	n = nodetest.Start(t, nodetest.Config(dir))
	assertCorrupt(t, n, "does not")
	// Acknowledged by the stream; the damaged ledger must not fold it.
	later := n.Submit(t, "later.yaml", mixedPlan)
	n.Stop(t)
	if _, h := finishedSeq(t, dir, run); h != head {
		t.Errorf("ledger head moved from %d to %d while damaged", head, h)
	}

	aside, err := node.RebuildLedger(dir, time.Now())
	if err != nil || !strings.HasPrefix(filepath.Base(aside), "ledger.damaged-") {
		t.Fatalf("RebuildLedger = %q, %v", aside, err)
	}
	if entries, _ := os.ReadDir(aside); len(entries) == 0 {
		t.Errorf("the damaged ledger was not kept in %s", aside)
	}
	n = nodetest.Start(t, nodetest.Config(dir))
	if r := n.WaitRun(t, run, 30*time.Second); r.Status != event.RunSucceeded {
		t.Errorf("run %s after the rebuild: %s, want succeeded", run, r.Status)
	}
	if r := n.WaitRun(t, later, 30*time.Second); r.Status != event.RunSucceeded {
		t.Errorf("run submitted while damaged: %s, want succeeded", r.Status)
	}
	waitReady(t, n)
	v, err := n.API.LedgerVerify(context.Background())
	if err != nil || !v.OK {
		t.Fatalf("verify after the rebuild: %+v, %v", v, err)
	}
}

// A flipped byte in a ledger table: the same, never a panic.
func TestDamagedTableThenRebuild(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	run := n.WaitRun(t, n.Submit(t, "mixed.yaml", mixedPlan), 30*time.Second).ID
	n.Stop(t)
	ledgertest.CorruptTable(t, filepath.Join(dir, "ledger"), 0.05)
	n = nodetest.Start(t, nodetest.Config(dir))
	assertCorrupt(t, n, "checksum mismatch")
	n.Stop(t)
	if _, err := node.RebuildLedger(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	n = nodetest.Start(t, nodetest.Config(dir))
	if r := n.WaitRun(t, run, 30*time.Second); r.Status != event.RunSucceeded {
		t.Errorf("run %s after the rebuild: %s, want succeeded", run, r.Status)
	}
	waitReady(t, n)
	if v, err := n.API.LedgerVerify(context.Background()); err != nil || !v.OK {
		t.Fatalf("verify after the rebuild: %+v, %v", v, err)
	}
}

// RebuildLedger refuses a data dir in use.
func TestRebuildLedgerRefusesRunningNode(t *testing.T) {
	dir := t.TempDir()
	nodetest.Start(t, nodetest.Config(dir))
	if _, err := node.RebuildLedger(dir, time.Now()); !errors.Is(err, node.ErrDataDirInUse) {
		t.Fatalf("RebuildLedger on a running node's dir = %v, want ErrDataDirInUse", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ledger")); err != nil {
		t.Fatalf("ledger moved: %v", err)
	}
}

// waitReady polls Ready until it passes.
func waitReady(t *testing.T, n *nodetest.Node) {
	t.Helper()
	var err error
	if poll.Wait(30*time.Second, func() bool { err = n.Ready(); return err == nil }) != nil {
		t.Fatalf("node not ready: %v", err)
	}
}

// A record rewritten far below the verified checkpoint (a clean stop put
// it at the head) is found by the re-hash the node runs in the background
// after start: within seconds the node is not ready, CORRUPT.
func TestOldRecordRewrittenFoundAfterStart(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	n.WaitRun(t, n.Submit(t, "mixed.yaml", mixedPlan), 30*time.Second)
	n.Stop(t)
	ledgertest.RewriteRecord(t, filepath.Join(dir, "ledger"), 3, func(ev *event.Event) { ev.Node = "forged" })
	n = nodetest.Start(t, nodetest.Config(dir))
	assertCorrupt(t, n, "record 3 does not chain")
}
