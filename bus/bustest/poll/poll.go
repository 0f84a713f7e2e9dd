// Package poll waits in tests for a condition to hold. It is the one place
// where agentic's tests wait: they poll for the state they need, never
// sleep for a time they hope is long enough.
//
// A condition is checked at once, then after pauses that start at a
// millisecond and double up to 50ms: a condition that holds soon is seen
// soon, and a slow one (a process started by the test, a query to another
// process) is not checked in a busy loop. The package imports nothing of
// agentic, so the tests of every package, bus included, can use it.
//
// Usage:
//
//	poll.Eventually(t, 10*time.Second, "the outbox to drain", func() bool {
//		return ob.Pending() == 0
//	})
//
// Eventually fails the test from the test's goroutine; Wait and
// WaitContext return an error instead, for other goroutines and for
// failure messages built from the last state seen.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Pauses between two checks of a condition.
const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

// Eventually checks cond until it holds, and fails t when it does not
// within timeout, naming what it waited for and how long. Like t.Fatal it
// must be called from the test's goroutine.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Wait(timeout, cond); err != nil {
		t.Fatalf("%v waiting for %s", err, what)
	}
}

// Wait checks cond until it holds (nil) or timeout passes (an error saying
// how long it waited). It may be called from any goroutine.
func Wait(timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := WaitContext(ctx, cond); err != nil {
		return fmt.Errorf("poll: timed out after %s", timeout)
	}
	return nil
}

// WaitContext checks cond until it holds (nil) or ctx is done (ctx's
// error). It may be called from any goroutine.
func WaitContext(ctx context.Context, cond func() bool) error {
	for pause := firstPause; !cond(); pause = min(2*pause, maxPause) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
	return nil
}
