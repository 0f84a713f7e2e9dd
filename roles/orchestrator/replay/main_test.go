package replay_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitEnd waits until the ledger export shows the end of run: a run's
// summary can read final a moment before the ledger's head (which bounds
// the export) takes in the batch that finished it.
func waitEnd(t *testing.T, n *nodetest.Node, run string) {
	t.Helper()
	var last *replay.Report
	err := poll.Wait(10*time.Second, func() bool {
		rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: run})
		last = rep
		return err == nil && rep.Finished != ""
	})
	if err != nil {
		t.Fatalf("run %s: the export never showed its run.finished (last report %+v)", run, last)
	}
}
