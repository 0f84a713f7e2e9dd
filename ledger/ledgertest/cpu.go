package ledgertest

import (
	"syscall"
	"testing"
	"time"
)

// CPUPerOp starts measuring the process's CPU time (user and system, all
// goroutines: Pebble's too); the function it returns, called after the
// benchmark's loop, reports it per operation as "cpu-ns/op". Unlike ns/op
// it hardly moves when other processes share the machine. Time the loop
// spends stopped (b.StopTimer) is counted too: keep it rare.
func CPUPerOp(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64((processCPU(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("ledgertest: getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
