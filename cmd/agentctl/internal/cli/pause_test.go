package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// TestRunPauseResumeRecorded: on a real node, run pause and run resume are
// accepted by the ledger as the operator's run.pause and run.resume of the
// run (an id prefix resolved), with the reason.
func TestRunPauseResumeRecorded(t *testing.T) {
	h, n := nodeHarness(t)
	long := n.Submit(t, "long.yaml", "goal: long\nsteps:\n  - id: wait\n    run: sleep 30\n")
	poll.Eventually(t, 10*time.Second, "the long run running", func() bool {
		s, err := n.API.RunSummary(context.Background(), long)
		return err == nil && s.Status == "running"
	})
	if r := h.run("run", "pause", long[:13], "--reason", "target down", "--timeout", "20s"); r.code != 0 || !strings.HasPrefix(r.stdout, "pause requested for run "+long) {
		t.Fatalf("run pause = %+v", r)
	}
	if r := h.run("run", "resume", long, "--timeout", "20s"); r.code != 0 || !strings.HasPrefix(r.stdout, "resume requested for run "+long) {
		t.Fatalf("run resume = %+v", r)
	}
	var got []api.AuditLine
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: long}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.RunPause) || l.Type == string(event.RunResume) {
			got = append(got, l)
		}
	}
	if len(got) != 2 || got[0].Type != string(event.RunPause) || string(got[0].Data) != `{"reason":"target down"}` ||
		got[1].Type != string(event.RunResume) || got[0].Node != n.Operator.ID {
		t.Fatalf("ledger holds %+v", got)
	}
	if r := h.run("run", "cancel", long); r.code != 0 {
		t.Fatalf("run cancel = %+v", r)
	}
}
