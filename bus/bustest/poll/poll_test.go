package poll

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Eventually returns once the condition holds, set here by another
// goroutine after the condition was checked a few times.
func TestEventuallySeesConditionSetElsewhere(t *testing.T) {
	var checks atomic.Int32
	var set atomic.Bool
	third := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-third
		set.Store(true)
	}()
	Eventually(t, 10*time.Second, "the flag", func() bool {
		if checks.Add(1) == 3 {
			close(third)
		}
		return set.Load()
	})
	<-done
	if n := checks.Load(); n < 3 {
		t.Fatalf("condition checked %d times, want at least 3", n)
	}
}

// Wait checks the condition until it holds, and not after.
func TestWaitChecksUntilTheConditionHolds(t *testing.T) {
	n := 0
	if err := Wait(10*time.Second, func() bool { n++; return n == 5 }); err != nil {
		t.Fatalf("Wait = %v, want nil once the condition holds", err)
	}
	if n != 5 {
		t.Fatalf("condition checked %d times, want 5 (until it held, not after)", n)
	}
}

// A condition that never holds makes Wait fail after its timeout, saying
// how long it waited.
func TestWaitTimesOut(t *testing.T) {
	start := time.Now()
	err := Wait(30*time.Millisecond, func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "timed out after 30ms") {
		t.Fatalf("Wait = %v, want a timeout naming 30ms", err)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("Wait gave up after %s, before its timeout", waited)
	}
}

// WaitContext returns the context's error when it ends first, and nil
// without waiting when the condition already holds.
func TestWaitContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitContext(ctx, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitContext on a cancelled context = %v, want context.Canceled", err)
	}
	if err := WaitContext(ctx, func() bool { return true }); err != nil {
		t.Fatalf("WaitContext with the condition holding = %v, want nil", err)
	}
}
