package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/node/api"
)

// A node's fault that /readyz reports but that could not be recorded in
// the ledger (the events stream it would go to is gone) is still listed by
// alarm ls, marked as the node's own word, not the ledger's.
func TestAlarmLsShowsFaultsNotRecorded(t *testing.T) {
	h, n := nodeHarness(t)
	n.WaitRun(t, n.Submit(t, "one.yaml", "goal: one\nsteps:\n  - id: a\n    run: echo a\n"), 30*time.Second)
	if r := h.run("alarm", "ls"); r.code != 0 || strings.TrimSpace(r.stdout) != "no alarms in force" {
		t.Fatalf("alarm ls before the fault = %+v", r)
	}
	if err := n.JS.DeleteStream(context.Background(), bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "the node's streams check failing: stream missing", func() bool {
		return slices.ContainsFunc(n.Checks(), func(c health.Status) bool { return !c.OK && c.Alarm == event.AlarmStreamMissing })
	})
	r := h.run("alarm", "ls")
	if r.code != 0 || !regexp.MustCompile(`(?m)^test-node\s+STREAM_MISSING\s+streams\s+\S+\s+.*not recorded`).MatchString(r.stdout) {
		t.Fatalf("alarm ls with the stream gone =\n%s%s", r.stdout, r.stderr)
	}
	r = h.run("alarm", "ls", "-o", "json")
	var got []api.Alarm
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("alarm ls -o json = %+v (%v)", r, err)
	}
	i := slices.IndexFunc(got, func(a api.Alarm) bool { return a.Alarm == event.AlarmStreamMissing })
	if i < 0 || got[i].Node != "test-node" || !got[i].Unrecorded || got[i].Seq != 0 || got[i].Reason == "" {
		t.Fatalf("json = %+v", got)
	}
}
