package node_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// The node exports the clock skew it measures for each signer; its own
// clock is the stream's, so its skew is about zero.
func TestClockSkewMetric(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	var line string
	poll.Eventually(t, 20*time.Second, "a skew gauge for the node's own events", func() bool {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for l := range strings.Lines(string(b)) {
			if strings.HasPrefix(l, "agentic_clock_skew_seconds{") && strings.Contains(l, `signer="test-node"`) {
				line = strings.TrimSpace(l)
				return true
			}
		}
		return false
	})
	v := line[strings.LastIndexByte(line, ' ')+1:]
	if v != "0" && v != "-1" && v != "1" {
		t.Fatalf("skew of the node's own clock: %q", line)
	}
}
