package telemetry_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/telemetry"
)

// childEnv makes the test binary the export child of BenchmarkExport1M.
const childEnv = "AGENTIC_TELEMETRY_EXPORT_CHILD"

// BenchmarkExport1M is the telemetry export's memory bound: 1,000,000
// ledger events (runs of five, every tenth never ending) projected and
// encoded as JSON lines, in a process of its own so that its peak RSS
// (VmHWM) is the export's. Reported: the peak RSS above the process's idle
// RSS before the export (target ≤ 100 MB), events/s and records. The
// events are made in the process, not read from a node: the query API's
// pages (bounded by count and size) are what agentctl holds of them.
func BenchmarkExport1M(b *testing.B) {
	var idle, peak, records, took float64
	for b.Loop() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"=1000000")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("export child: %v\n%s", err, out)
		}
		for _, f := range strings.Fields(string(out)) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			n, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "idle_kb":
				idle = n
			case "peak_kb":
				peak = n
			case "records":
				records = n
			case "took_ms":
				took = n
			}
		}
	}
	if peak == 0 {
		b.Fatal("the export child reported no peak RSS")
	}
	b.ReportMetric((peak-idle)/1024, "peak_rss_above_idle_MB")
	b.ReportMetric(1e6/(took/1000), "events/s")
	b.ReportMetric(records, "records")
	b.ReportMetric(0, "ns/op")
	if peak-idle > 100*1024 {
		b.Fatalf("peak RSS %.0f MB above idle, target ≤ 100 MB", (peak-idle)/1024)
	}
}

// exportChild is BenchmarkExport1M's child process (TestMain runs it
// when childEnv is set): it projects n synthetic events and prints its
// idle and peak RSS.
func exportChild(n int) error {
	runtime.GC()
	idle, err := procStatusKB("VmRSS")
	if err != nil {
		return err
	}
	start := time.Now()
	p := telemetry.NewProjector()
	w := bufio.NewWriterSize(io.Discard, 64<<10)
	enc := json.NewEncoder(w)
	records := 0
	var perr error
	synthetic(n, func(ev event.Event) {
		if perr == nil {
			perr = p.Project(ev, func(r telemetry.Record) error { records++; return enc.Encode(r) })
		}
	})
	if perr != nil {
		return perr
	}
	if err := w.Flush(); err != nil {
		return err
	}
	peak, err := procStatusKB("VmHWM")
	if err != nil {
		return err
	}
	fmt.Printf("idle_kb=%d peak_kb=%d records=%d took_ms=%d\n", idle, peak, records, time.Since(start).Milliseconds())
	return nil
}

// procStatusKB reads a kB field of /proc/self/status.
func procStatusKB(field string) (int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}
