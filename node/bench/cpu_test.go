package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
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

// procCPU is what /proc/PID/stat says process pid used of the CPU: its
// own time (user + system) and that of its children it waited for (the
// step shells an agentd reaps), or zeros if it cannot be read.
func procCPU(pid int) (self, children time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) may hold spaces: count from its end.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 { // fields 3.. ; utime is field 14, cstime 17
		return 0, 0
	}
	tick := func(s string) time.Duration {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * time.Second / clockTicks
	}
	return tick(f[11]) + tick(f[12]), tick(f[13]) + tick(f[14])
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100
