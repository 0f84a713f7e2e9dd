package membership

import (
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

// BenchmarkDetectFailure measures failure detection with each preset: in
// a cluster of three on loopback, a member is stopped without leaving (a
// crash, as the others see it) and the time until a fixed other member
// sees it Dead is taken. ns/op is the mean; detect-median-ms and
// detect-max-ms are reported. The LAN preset takes seconds per
// iteration: run with -benchtime=5x or so.
func BenchmarkDetectFailure(b *testing.B) {
	for _, preset := range Presets {
		b.Run(preset, func(b *testing.B) { benchDetect(b, preset) })
	}
}

func benchDetect(b *testing.B, preset string) {
	cfg := func(name string, join ...string) Config {
		c := testConfig(name, join...)
		c.Preset = preset
		return c
	}
	var took []time.Duration
	b.StopTimer()
	for range b.N {
		// A new cluster each time: a dead member stays in memberlist's
		// count until it is reaped (30 s), and stale gossip about a
		// member's previous process can mark a restarted one dead.
		watcher := start(b, cfg("watcher"))
		peer := start(b, cfg("peer", watcher.Addr()))
		name := "victim"
		victim := start(b, cfg(name, watcher.Addr()))
		poll.Eventually(b, time.Minute, "all three to see each other", func() bool {
			return stateOf(watcher, name) == Alive && stateOf(peer, name) == Alive && stateOf(victim, "peer") == Alive
		})
		select {
		case <-watcher.Changed():
		default:
		}
		b.StartTimer()
		began := time.Now()
		victim.Stop()
		deadline := time.After(time.Minute)
		for stateOf(watcher, name) != Dead {
			select {
			case <-watcher.Changed():
			case <-deadline:
				b.Fatalf("%s not seen dead within a minute", name)
			}
		}
		took = append(took, time.Since(began))
		b.StopTimer()
		peer.Stop()
		watcher.Stop()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "detect-median-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "detect-max-ms")
}
