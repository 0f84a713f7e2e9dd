package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/nats-io/nats.go"
)

// Shell plan shape: shellChains independent chains of shellDepth steps,
// each step depending on the one before it in its chain.
const (
	shellChains = 50
	shellDepth  = 40
)

// shellCommand is every step's command, and what the raw measurement forks.
const shellCommand = "true"

// BenchmarkShellSteps2000 is figure (f): a full node with the default
// executor slots (config.Default: 2 per CPU) runs 2,000 shell steps
// `run: "true"` as 50 chains of 40, and in the same function the same
// 2,000 processes are forked without agentic: `xargs -P SLOTS -n 1 sh -c
// true`, on the idle node just before and just after the run (the raw
// rate is the 4,000 processes over both times). Reported: steps/s (submit
// → run.finished published), raw_procs/s, and ratio_steps_over_raw.
//
// Diagnostics: slots, submit_to_first_assign_ms, the task.started and
// task.finished messages the run put on the stream (how well the
// executor's results were grouped), the mean legs of a slot's cycle (see
// shellResult) and the CPU share used.
func BenchmarkShellSteps2000(b *testing.B) {
	slots := config.Default().Executor.Slots
	steps := shellChains * shellDepth
	file := shellPlan(shellChains, shellDepth)
	var took, firstAssign time.Duration
	var raw, cpu float64
	var startedMsgs, finishedMsgs, assignedMsgs int
	var deliver, execute, decide durations
	for b.Loop() {
		b.StopTimer()
		bn := startNode(b, slots)
		before := forkRaw(b, steps, slots)
		b.StartTimer()
		r := runShellPlan(b, bn, file, steps, slots)
		b.StopTimer()
		after := forkRaw(b, steps, slots)
		bn.Stop(b)
		b.StartTimer()
		took += r.took
		firstAssign += r.firstAssign
		cpu += r.cpu
		startedMsgs += r.startedMsgs
		finishedMsgs += r.finishedMsgs
		assignedMsgs += r.assignedMsgs
		deliver, execute, decide = append(deliver, r.deliver...), append(execute, r.execute...), append(decide, r.decide...)
		raw += float64(2*steps) / (before + after).Seconds()
	}
	n := float64(b.N)
	rate := float64(steps) * n / took.Seconds()
	raw /= n
	b.ReportMetric(rate, "steps/s")
	b.ReportMetric(raw, "raw_procs/s")
	b.ReportMetric(rate/raw, "ratio_steps_over_raw")
	b.ReportMetric(float64(slots), "slots")
	b.ReportMetric(float64(firstAssign.Milliseconds())/n, "submit_to_first_assign_ms")
	b.ReportMetric(float64(startedMsgs)/n, "started_msgs")
	b.ReportMetric(float64(finishedMsgs)/n, "finished_msgs")
	b.ReportMetric(float64(assignedMsgs)/n, "assigned_msgs")
	b.ReportMetric(mean(deliver), "assigned_to_started_mean_ms")
	b.ReportMetric(mean(execute), "started_to_finished_mean_ms")
	b.ReportMetric(mean(decide), "finished_to_slot_assigned_mean_ms")
	b.ReportMetric(cpu/n, "cpu_util")
	b.ReportMetric(0, "ns/op")
}

// forkRaw runs `sh -c true` procs times, slots at once, through xargs and
// returns how long it took. It fails unless xargs ran every one of them
// (-t echoes each command line to stderr) and all exited 0.
func forkRaw(tb testing.TB, procs, slots int) time.Duration {
	tb.Helper()
	cmd := exec.Command("xargs", "-t", "-P", strconv.Itoa(slots), "-n", "1", "sh", "-c", shellCommand)
	cmd.Stdin = strings.NewReader(strings.Repeat("x\n", procs))
	var trace bytes.Buffer
	cmd.Stderr = &trace
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("xargs sh -c %s: %v\n%s", shellCommand, err, trace.Bytes())
	}
	took := time.Since(start)
	if got := bytes.Count(trace.Bytes(), []byte("\n")); got != procs {
		tb.Fatalf("xargs ran %d processes, want %d", got, procs)
	}
	return took
}

type shellResult struct {
	took, firstAssign         time.Duration
	cpu                       float64
	startedMsgs, finishedMsgs int
	assignedMsgs              int
	// The legs of a slot's cycle, per step: assigned→started (delivery,
	// start record, fork), started→finished (the process, its output
	// drained) and finished→the next assignment to the freed slot (the
	// result through outbox, JetStream, ledger and the leader's decision).
	deliver, execute, decide durations
}

// runShellPlan submits file and waits for its run to finish; it fails
// unless the run succeeded with every one of its steps, and unless the
// stream shows, for each step, a task.started with a process id and a
// task.finished with exit code 0.
func runShellPlan(tb testing.TB, bn *benchNode, file string, steps, slots int) shellResult {
	tb.Helper()
	rec := runPlan(tb, bn, "shell2000.json", file, steps)
	r := shellResult{took: rec.took, firstAssign: rec.firstAssign, cpu: rec.cpu}
	run, kept := rec.run, rec.msgs
	for _, m := range kept {
		switch event.TypeFromSubject(m.Subject) {
		case event.TaskStarted:
			r.startedMsgs++
		case event.TaskFinished:
			r.finishedMsgs++
		case event.TaskAssigned:
			r.assignedMsgs++
		}
	}
	tl := checkProcesses(tb, bn, kept, run, steps)
	r.deliver, r.execute, r.decide = slotLegs(tl, run, slots)
	return r
}

// slotLegs returns, per step of run, the legs of a slot's cycle (see
// shellResult). The chains compete for the executor's slots, so the step
// that follows a finished one onto its slot is the next assignment: with
// slots slots, the (k+slots)-th assignment waits for the k-th result.
func slotLegs(tl timeline, run string, slots int) (deliver, execute, decide durations) {
	var assigned, finished []time.Time
	for c := range shellChains {
		for s := range shellDepth {
			st := tl.step(run, shellStepID(c, s), 1)
			deliver = append(deliver, st.started.Sub(st.assigned))
			execute = append(execute, st.finished.Sub(st.started))
			assigned, finished = append(assigned, st.assigned), append(finished, st.finished)
		}
	}
	slices.SortFunc(assigned, time.Time.Compare)
	slices.SortFunc(finished, time.Time.Compare)
	for k := 0; k+slots < len(assigned); k++ {
		decide = append(decide, assigned[k+slots].Sub(finished[k]))
	}
	return deliver, execute, decide
}

// checkProcesses fails unless msgs hold, for steps distinct steps of run,
// a task.started with a process id and a task.finished that succeeded
// with exit code 0. It returns the timeline of the run's steps.
func checkProcesses(tb testing.TB, bn *benchNode, msgs []*nats.Msg, run string, steps int) timeline {
	tb.Helper()
	v := envelope.NewVerifier(bn.root)
	tl := timeline{}
	pids, exited := map[string]bool{}, map[string]bool{}
	for _, m := range msgs {
		env, err := v.Verify(m.Data, m.Subject, time.Now())
		if err != nil {
			tb.Fatalf("message on %s does not verify: %v", m.Subject, err)
		}
		for _, ev := range env.Events {
			if ev.Run != run {
				continue
			}
			if err := tl.add(ev.Type, ev.Run, ev.Time, ev.Data); err != nil {
				tb.Fatal(err)
			}
			switch ev.Type {
			case event.TaskStarted:
				var d event.TaskStartedData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					tb.Fatal(err)
				}
				if d.PID > 0 {
					pids[d.Step] = true
				}
			case event.TaskFinished:
				var d event.TaskFinishedData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					tb.Fatal(err)
				}
				if d.Status == event.TaskSucceeded && d.ExitCode == 0 {
					exited[d.Step] = true
				}
			}
		}
	}
	if len(pids) != steps || len(exited) != steps {
		tb.Fatalf("run %s: %d steps started a process, %d exited 0; want %d", run, len(pids), len(exited), steps)
	}
	return tl
}

// shellPlan is a plan file (JSON, flat format) of chains × depth shell
// steps running shellCommand; step c<C>-s<S> depends on c<C>-s<S-1>.
func shellPlan(chains, depth int) string {
	p := event.Plan{Goal: fmt.Sprintf("shell %d×%d", chains, depth)}
	for c := range chains {
		for s := range depth {
			st := event.Step{ID: shellStepID(c, s), Kind: event.KindShell, Run: shellCommand}
			if s > 0 {
				st.DependsOn = []string{shellStepID(c, s-1)}
			}
			p.Steps = append(p.Steps, st)
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// shellStepID names step s of chain c.
func shellStepID(c, s int) string { return fmt.Sprintf("c%02d-s%02d", c, s) }

// mean is the mean of d in milliseconds.
func mean(d durations) float64 {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64(sum.Microseconds()) / 1000 / float64(max(len(d), 1))
}
