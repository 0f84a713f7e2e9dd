package core

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Backoff bounds.
const (
	// DefaultBackoff is the first retry delay of a step that sets none.
	DefaultBackoff = time.Second
	// MaxBackoff caps every retry delay.
	MaxBackoff = 5 * time.Minute
)

// Backoff is the delay before retrying step after its failed attempt
// (1-based): the step's Backoff (DefaultBackoff if unset) doubled per
// attempt, capped at MaxBackoff, with ±20% jitter. The jitter is derived by
// hashing run/step/attempt (FNV-64a) and computed in integers, so every node
// folding the same failure computes the same delay on every architecture.
func Backoff(run string, step event.Step, attempt int) time.Duration {
	d := step.Backoff.Std()
	if d <= 0 {
		d = DefaultBackoff
	}
	for n := 1; n < attempt && d < MaxBackoff; n++ {
		d *= 2
	}
	d = min(d, MaxBackoff)
	h := fnv.New64a()
	h.Write([]byte(run + "/" + step.ID + "/" + strconv.Itoa(attempt)))
	permille := 800 + time.Duration(h.Sum64()%401) // 800..1200
	return min(d/1000*permille+d%1000*permille/1000, MaxBackoff)
}
