package cli

import (
	"sync/atomic"
	"testing"
)

// TestSubmitReadsCredsOnce: a goal submit reads its creds file once —
// the identity that signs, the root compared with the cluster's, the root
// that checks the answers and the NATS user all come from that reading
// (it read the file five times and parsed it three).
func TestSubmitReadsCredsOnce(t *testing.T) {
	h := newHarness(t).withNode()
	var reads atomic.Int32
	read := readFile
	readFile = func(path string) ([]byte, error) {
		if path == h.creds {
			reads.Add(1)
		}
		return read(path)
	}
	t.Cleanup(func() { readFile = read })
	r := h.run("goal", "submit", "-f", writePlan(t, "plan.yaml", goodPlan))
	if r.code != ExitOK {
		t.Fatalf("goal submit = %+v", r)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("goal submit read %s %d times, want once", h.creds, n)
	}
}
