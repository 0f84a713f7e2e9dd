package event_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestApplyMemoryQuotesForTheShell: every value, whatever it holds,
// reaches the command as one word with its bytes unchanged — checked by
// a real sh — while the criteria (a prompt) get it as it is.
func TestApplyMemoryQuotesForTheShell(t *testing.T) {
	values := []string{"plain", "it's", "a b", "$(touch /tmp/x) `id` ;rm -rf /", "'\"\\", "-rf", "", "line\nbreak"}
	for _, v := range values {
		s := event.Step{ID: "a", Run: `printf '%s|' ${memory:shared/k} ${memory:run/k}`, Criteria: "says ${memory:shared/k}",
			Compensate: "echo ${memory:shared/k}"}
		if got := event.MemoryRefs(s); strings.Join(got, ",") != "shared/k,run/k" {
			t.Fatalf("MemoryRefs = %v", got)
		}
		r := event.ApplyMemory(s, []event.MemoryValue{{Ref: "shared/k", Value: v}, {Ref: "run/k", Value: "x"}})
		out, err := exec.Command("/bin/sh", "-c", r.Run).Output()
		if err != nil || string(out) != v+"|x|" {
			t.Errorf("value %q: sh printed %q (%v) for %q", v, out, err, r.Run)
		}
		if r.Criteria != "says "+v || r.Compensate != s.Compensate {
			t.Errorf("value %q: criteria %q, compensate %q", v, r.Criteria, r.Compensate)
		}
	}
	if got := event.MemoryRefs(event.Step{Run: "echo ${memory:shared} ${memory:/k} ${HOME} ${memory:a b/c}"}); len(got) != 0 {
		t.Errorf("malformed references matched: %v", got)
	}
}
