package executor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
)

// BenchmarkQueue measures how well the executor alone keeps its slots
// busy: benchSteps shell steps `true` on benchSlots slots, fed by a
// stand-in leader that keeps Slots + Queue attempts outstanding — an
// initial batch, then one new assignment (one signed message, published
// to JetStream) for each task.finished the executor emits, after
// benchDecide, a stand-in for the orchestration round trip (outbox,
// ledger, Decide). Measured with Queue 0 and Queue = Slots in the same
// function, each from the first assignment to the last result, and the
// same number of processes forked by `xargs -P SLOTS -n 1 sh -c true`
// before and after.
//
// Every assignment names a policy version, which the executor fetches
// once and judges each step with, as on a node.
//
// Reported: steps_per_s_q0, steps_per_s_qslots, ratio_qslots_over_q0,
// raw_procs_per_s and each rate over raw; and the CPU the test process
// used per step (getrusage RUSAGE_SELF: the executor, the embedded server
// and the stand-in leader), cpu_us_per_step_q0 and _qslots, the figure
// the executor's own cost moves, and its context switches per step,
// ctxsw_per_step_q0 and _qslots, and the goroutines it created per step,
// goroutines_per_step_q0 and _qslots.
func BenchmarkQueue(b *testing.B) {
	var q0, qs, raw float64
	var u0, us usage
	for b.Loop() {
		before := forkRate(b, benchSteps, benchSlots)
		r, u := runQueued(b, 0)
		q0, u0 = q0+r, u0.add(u)
		r, u = runQueued(b, benchSlots)
		qs, us = qs+r, us.add(u)
		raw += (before + forkRate(b, benchSteps, benchSlots)) / 2
	}
	n := float64(b.N)
	q0, qs, raw = q0/n, qs/n, raw/n
	b.ReportMetric(float64(u0.cpu.Microseconds())/n/benchSteps, "cpu_us_per_step_q0")
	b.ReportMetric(float64(us.cpu.Microseconds())/n/benchSteps, "cpu_us_per_step_qslots")
	b.ReportMetric(float64(u0.wakes)/n/benchSteps, "reporter_wakes_per_step_q0")
	b.ReportMetric(float64(us.wakes)/n/benchSteps, "reporter_wakes_per_step_qslots")
	b.ReportMetric(float64(u0.passes)/n/benchSteps, "loop_passes_per_step_q0")
	b.ReportMetric(float64(us.passes)/n/benchSteps, "loop_passes_per_step_qslots")
	b.ReportMetric(float64(u0.goroutines)/n/benchSteps, "goroutines_per_step_q0")
	b.ReportMetric(float64(us.goroutines)/n/benchSteps, "goroutines_per_step_qslots")
	b.ReportMetric(float64(u0.switches)/n/benchSteps, "ctxsw_per_step_q0")
	b.ReportMetric(float64(us.switches)/n/benchSteps, "ctxsw_per_step_qslots")
	b.ReportMetric(q0, "steps_per_s_q0")
	b.ReportMetric(qs, "steps_per_s_qslots")
	b.ReportMetric(qs/q0, "ratio_qslots_over_q0")
	b.ReportMetric(raw, "raw_procs_per_s")
	b.ReportMetric(q0/raw, "ratio_q0_over_raw")
	b.ReportMetric(qs/raw, "ratio_qslots_over_raw")
	b.ReportMetric(0, "ns/op")
}

const (
	benchSteps  = 1000
	benchSlots  = 4
	benchDecide = 2 * time.Millisecond
)

// runQueued runs benchSteps steps through a fresh executor with queue and
// returns steps/s and what the process used meanwhile.
func runQueued(b *testing.B, queue int) (float64, usage) {
	h := newHarness(b)
	led := h.servePolicies(map[int64]string{1: testPolicy})
	node := "bench-q" + strconv.Itoa(queue)
	lead := &standIn{h: h, node: node, run: "r-" + node, policy: led.refs[1], done: make(chan struct{})}
	ex := h.startWith(node, b.TempDir(), lead, func(c *Config) {
		c.Slots, c.Queue = benchSlots, queue
		c.Safety.Policies = APIPolicies(led.client)
	})
	defer h.stop(ex, 10*time.Second)
	used := processUsage(b)
	start := time.Now()
	lead.mu.Lock()
	for range min(benchSlots+queue, benchSteps) {
		lead.assignLater(0)
	}
	lead.mu.Unlock()
	select {
	case <-lead.done:
	case <-time.After(5 * time.Minute):
		b.Fatal("the steps did not finish within 5 minutes")
	}
	took := time.Since(start)
	used = processUsage(b).sub(used)
	lead.wg.Wait()
	if lead.failed > 0 {
		b.Fatalf("%d steps did not succeed", lead.failed)
	}
	h.stop(ex, 10*time.Second)
	used.passes, used.wakes = ex.lp.passes, ex.report.wakes
	return benchSteps / took.Seconds(), used
}

// usage is what the test process used: CPU time (user and system) and
// context switches (voluntary and not: a thread going to sleep, for one,
// a goroutine hand-off that found no running thread).
type usage struct {
	cpu      time.Duration
	switches int64
	passes   int // of the executor's loop
	wakes    int // of the executor's reporter
	// goroutines counts the goroutines created.
	goroutines uint64
}

func (u usage) add(v usage) usage {
	return usage{u.cpu + v.cpu, u.switches + v.switches, u.passes + v.passes, u.wakes + v.wakes, u.goroutines + v.goroutines}
}
func (u usage) sub(v usage) usage {
	return usage{cpu: u.cpu - v.cpu, switches: u.switches - v.switches, goroutines: u.goroutines - v.goroutines}
}

// processUsage is what the test process has used so far.
func processUsage(tb testing.TB) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(created)
	var n uint64
	if created[0].Value.Kind() == metrics.KindUint64 {
		n = created[0].Value.Uint64()
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), switches: ru.Nvcsw + ru.Nivcsw, goroutines: n}
}

// standIn is the executor's emitter and a stand-in leader: each
// task.finished it receives leads to the next assignment, benchDecide
// later (each on its own: a latency, not a queue).
type standIn struct {
	h    *harness
	node string
	run  string
	// policy is the policy version every assignment names.
	policy event.PolicyRef
	done   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	assigned int
	finished int
	failed   int
}

func (s *standIn) Emit(_ context.Context, drafts ...event.Draft) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range drafts {
		if d.Type != event.TaskFinished {
			continue
		}
		var f event.TaskFinishedData
		ev := event.Event{Type: d.Type, Data: d.Data}
		if ev.Decode(&f) != nil || f.Status != event.TaskSucceeded {
			s.failed++
		}
		s.finished++
		if s.finished == benchSteps {
			close(s.done)
		}
		s.assignLater(benchDecide)
	}
	return nil
}

// assignLater publishes the next assignment, if any is left, after d.
// Call with s.mu held.
func (s *standIn) assignLater(d time.Duration) {
	if s.assigned == benchSteps {
		return
	}
	i := s.assigned
	s.assigned++
	s.wg.Add(1)
	time.AfterFunc(d, func() {
		defer s.wg.Done()
		a := event.MustDraft(event.TaskAssigned, s.run, event.TaskAssignedData{
			Attempt: 1, Node: s.node, Step: event.Step{ID: fmt.Sprintf("s%04d", i), Kind: event.KindShell, Run: "true"},
			Policy: s.policy,
		})
		a.Target = s.node
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := bus.PublishSigned(ctx, s.h.js, s.h.orch, a); err != nil {
			s.h.t.Errorf("publish assignment %d: %v", i, err)
		}
	})
}

// forkRate runs `sh -c true` procs times, slots at once, through xargs and
// returns processes/s.
func forkRate(tb testing.TB, procs, slots int) float64 {
	tb.Helper()
	cmd := exec.Command("xargs", "-P", strconv.Itoa(slots), "-n", "1", "sh", "-c", "true")
	cmd.Stdin = strings.NewReader(strings.Repeat("x\n", procs))
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("xargs: %v\n%s", err, errOut.Bytes())
	}
	return float64(procs) / time.Since(start).Seconds()
}
