package cli

import (
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestGoalSubmitTraceParent: --traceparent travels inside the signed
// goal.submitted; one that is not a W3C traceparent is a usage error and
// nothing is published.
func TestGoalSubmitTraceParent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h := newHarness(t).withNode()
	path := writePlan(t, "hello.yaml", goodPlan)
	for _, bad := range []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"} {
		if r := h.run("goal", "submit", "-f", path, "--traceparent", bad); r.code != ExitUsage || !strings.Contains(r.stderr, "traceparent") {
			t.Errorf("--traceparent %s = %+v", bad, r)
		}
	}
	if n := len(h.events()); n != 0 {
		t.Fatalf("%d events published for bad traceparents", n)
	}
	if r := h.run("goal", "submit", "-f", path, "--traceparent", tp); r.code != 0 {
		t.Fatalf("submit = %+v", r)
	}
	evs := h.events()
	if len(evs) != 1 || len(evs[0].Events) != 1 {
		t.Fatalf("published %+v", evs)
	}
	var data event.GoalSubmittedData
	if err := evs[0].Events[0].Decode(&data); err != nil {
		t.Fatal(err)
	}
	if data.TraceParent != tp || data.Goal != "Say hello" {
		t.Fatalf("goal.submitted = %+v", data)
	}
}
