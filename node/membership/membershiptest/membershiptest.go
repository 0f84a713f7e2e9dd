// Package membershiptest is the test kit of packages whose tests run
// gossip members: a goroutine leak check that allows for memberlist's
// shutdown.
package membershiptest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"go.uber.org/goleak"
)

// Linger bounds how long memberlist's goroutines may outlive a stopped
// member: its Shutdown returns before a probe in flight ends, which
// happens when the probe's ack timer fires, within the probe interval
// scaled by Lifeguard (at most 8 × 1 s with the LAN preset).
const Linger = 15 * time.Second

// VerifyTestMain runs the tests, then fails the run if goroutines other
// than those opts ignore are still there after Linger (goleak's own check
// waits less than a probe may take).
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		_ = poll.Wait(Linger, func() bool { return goleak.Find(opts...) == nil })
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
