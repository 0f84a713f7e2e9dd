package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// Output the logs stream no longer holds (its limits dropped the oldest
// messages) is not silently missing: run logs says where it is cut.
func TestRunLogsSaysWhereRetentionCutTheOutput(t *testing.T) {
	const runC = "0190eeee-0000-7000-8000-000000000006"
	h := newHarness(t).withNode()
	started := time.Now().Add(-time.Second)
	h.node.with(func(f *fakeNode) {
		f.runs = []api.Run{{ID: runC, Goal: "long", Status: event.RunSucceeded, Revision: 1, CreatedAt: started,
			Steps: []api.Step{{ID: "build", Attempt: 1, StartedAt: &started}}}}
	})
	for i := range 30 {
		h.publishLog(runC, "build", 1, "stdout", fmt.Sprintf("line %d\n", i))
	}
	ctx := context.Background()
	st, err := h.conn.JS.Stream(ctx, bus.LogsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 10 // retention drops the oldest 20
	if _, err := h.conn.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r := h.run("run", "logs", runC)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 11 || !strings.Contains(lines[0], "earlier output") || !strings.Contains(lines[0], "AGENTIC_LOGS") || !strings.HasSuffix(lines[1], "| line 20") {
		t.Fatalf("run logs of a cut output = %+v", r)
	}
	r = h.run("run", "logs", runC, "-o", "jsonl")
	first := decodeJSON[logLine](t, strings.SplitN(r.stdout, "\n", 2)[0])
	if r.code != 0 || !first.Cut || first.Step != "build" {
		t.Fatalf("run logs -o jsonl of a cut output = %+v", r)
	}
}
