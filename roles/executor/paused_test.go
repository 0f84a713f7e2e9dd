package executor

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

// While Config.Paused says why (the data dir below its floor), an accepted
// attempt stays queued and does not start; once it returns nil the attempt
// starts by itself.
func TestPausedExecutorQueues(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	var paused atomic.Bool
	paused.Store(true)
	ex := h.start("n1", t.TempDir(), rec, func(c *Config) {
		c.Paused = func() error {
			if paused.Load() {
				return errors.New("disk: below the floor")
			}
			return nil
		}
	})
	h.assign("n1", "r1", "a", 0, "touch "+h.marker("a"))
	poll.Eventually(t, 10*time.Second, "a queued", func() bool { return ex.Stats().Queued == 1 })
	// The loop looks at Paused on every tick (250ms): a second would have
	// started it.
	if poll.Wait(time.Second, func() bool { return rec.started("a") || h.ran("a") }) == nil {
		t.Fatal("a paused executor started an attempt")
	}
	paused.Store(false)
	poll.Eventually(t, 10*time.Second, "a run once unpaused", func() bool { return len(rec.finished("a")) == 1 && h.ran("a") })
}
