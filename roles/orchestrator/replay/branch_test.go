package replay_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
)

// TestReplayBranchingRun: the debugging playbook (examples/debug.yaml:
// failure branches taken, steps skipped because their branch was not
// taken, a join) replays without divergence — the skips are no decisions,
// the fold derives them — and the replay adds nothing to the ledger.
func TestReplayBranchingRun(t *testing.T) {
	plan, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "debug.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	run := n.Submit(t, "debug.yaml", string(plan))
	r := n.WaitRun(t, run, 30*time.Second)
	waitEnd(t, n, run)
	skipped := 0
	for _, st := range r.Steps {
		if st.Code == string(core.CodeBranchNotTaken) {
			skipped++
		}
	}
	if r.Status != event.RunSucceeded || skipped == 0 {
		t.Fatalf("run %s: %s (%s), %d steps not reached", r.ID, r.Status, r.Reason, skipped)
	}
	last := func() uint64 { // the run's last event
		var seq uint64
		for ev, err := range n.API.Events(context.Background(), 0, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Run == run {
				seq = ev.Seq
			}
		}
		return seq
	}
	before := last()
	rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged() || rep.Checked < len(r.Steps)-skipped+2 || rep.Reproduced != rep.Checked || rep.Finished != event.RunSucceeded {
		b, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("replay: %s", b)
	}
	if after := last(); after != before {
		t.Fatalf("the replay added events to the run: its last went from %d to %d", before, after)
	}
}
