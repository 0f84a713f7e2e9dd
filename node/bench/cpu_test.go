package bench

import (
	"runtime"
	"syscall"
	"time"
)

// cpuClock measures the CPU time this process (benchmark, embedded
// nats-server and node alike) spends over a wall-clock interval, to tell a
// CPU-bound figure from one bound by fsync or wake-up latency.
type cpuClock struct {
	wall time.Time
	cpu  time.Duration
}

func startCPU() cpuClock { return cpuClock{wall: time.Now(), cpu: processCPU()} }

// utilization is the share of all cores used since c started: 1.0 means
// every core busy the whole time.
func (c cpuClock) utilization() float64 {
	wall := time.Since(c.wall)
	if wall <= 0 {
		return 0
	}
	return float64(processCPU()-c.cpu) / float64(wall) / float64(runtime.NumCPU())
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
