package improve

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// busyDay makes n events of 24 hours of a busy cluster: runs of 20
// families whose shell steps are assigned and finish (one in 20 fails,
// one in 50 times out), a policy gate and its answer every 40 runs, a
// replan every 30, a rating every 10.
func busyDay(n int) []event.Event {
	start := time.Now().Add(-24 * time.Hour)
	step := 24 * time.Hour / time.Duration(n)
	out := make([]event.Event, 0, n)
	seq := uint64(0)
	add := func(typ event.Type, run string, v any) {
		seq++
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		out = append(out, event.Event{Seq: seq, Type: typ, Run: run, Time: start.Add(time.Duration(seq) * step), Data: data})
	}
	cmds := []string{"apt-get install -y nginx", "make build", "go test ./...", "curl -fsS http://mirror/x", "./deploy.sh staging", "systemctl restart app"}
	for r := 0; len(out) < n; r++ {
		run := fmt.Sprintf("run-%07d", r)
		fam := fmt.Sprintf("family-%02d", r%20)
		steps := make([]event.Step, 4)
		for i := range steps {
			steps[i] = event.Step{ID: fmt.Sprintf("s%d", i), Kind: event.KindShell, Run: cmds[(r+i)%len(cmds)]}
		}
		add(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "g", Family: fam})
		add(event.PlanProposed, run, event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Family: fam, Steps: steps}})
		for i, s := range steps {
			add(event.TaskAssigned, run, event.TaskAssignedData{Step: s, Attempt: 1, Node: "n1"})
			fin := event.TaskFinishedData{Step: s.ID, Attempt: 1, Node: "n1", Status: event.TaskSucceeded, Duration: event.Duration(time.Second)}
			switch {
			case (r+i)%50 == 0:
				fin.Status, fin.Class, fin.TimedOut, fin.ExitCode = event.TaskFailed, event.ClassTransient, true, -1
			case (r+i)%20 == 0:
				fin.Status, fin.Class, fin.ExitCode = event.TaskFailed, event.ClassLogic, 1
			}
			add(event.TaskFinished, run, fin)
		}
		if r%40 == 0 {
			add(event.GateOpened, run, event.GateOpenedData{Step: "s0", Kind: event.GatePolicy, Verdict: &event.Verdict{Action: "confirm", Level: "high"}})
			add(event.GateDecided, run, event.GateDecidedData{Step: "s0", Action: event.GateAccept})
		}
		if r%30 == 0 {
			add(event.PlanReplanRequested, run, event.PlanReplanRequestedData{Plan: event.Plan{Family: fam}, Failure: event.StepFailure{Step: "s1", Command: steps[1].Run, Error: "exit 1"}})
		}
		if r%10 == 0 {
			add(event.RunRated, run, event.RunRatedData{Rating: event.RatingDown, Reason: "slow"})
		}
		add(event.RunFinished, run, map[string]any{"status": "succeeded"})
	}
	return out[:n]
}

// BenchmarkEvalPass500k is an evaluation pass over 24 hours of a busy
// cluster (500k events): folding them into the telemetry window, then
// running every rule. The target is at most 5 s, in bounded memory. It
// reports the pass's time (s/pass; on a shared machine cpu-ns/op, the
// process's CPU time, moves less), the heap the window holds after it
// (window-MB, live after a GC) and the peak heap the pass added (peak-MB,
// sampled every 10k events, garbage not yet collected included; the
// events the benchmark feeds are not counted). It fails when the pass
// took more than 5 s of CPU: on a machine other processes share, the
// wall time says more about them than about the pass.
func BenchmarkEvalPass500k(b *testing.B) {
	evs := busyDay(500_000)
	runtime.GC()
	var before, ms runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := before.HeapAlloc
	b.ResetTimer()
	cpu := ledgertest.CPUPerOp(b)
	var tel *Telemetry
	var found int
	for range b.N {
		tel = NewTelemetry(0, 0)
		for i, ev := range evs {
			tel.Fold(ev)
			if i%10_000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
		tel.Trim(tel.Now())
		found = len(Evaluate(DefaultRules(), tel, Input{Now: tel.Now(), State: NewState()}))
	}
	b.StopTimer()
	cpu()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(evs)
	secs := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(secs, "s/pass")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "window-MB")
	b.ReportMetric(float64(peak-before.HeapAlloc)/(1<<20), "peak-MB")
	b.ReportMetric(float64(len(tel.Attempts)), "attempts")
	b.ReportMetric(float64(found), "proposals")
	// A benchmark reports (cpu-ns/op against the 5 s target); it fails
	// on no time: the machine's load moves it.
}

// busyLedger plants busyDay(n) in a real ledger (Pebble): the runs in
// blocks of 64, each block's events of one place in their runs and one
// type signed as one batch (a batch carries one type), every run's own
// order kept, the times spread over the last 24 hours in ledger order.
func busyLedger(b *testing.B, n int) *ledger.Store {
	evs := busyDay(n)
	kit := ledgertest.NewKit(b)
	store := ledgertest.Open(b)
	type item struct {
		ev       event.Event
		idx, blk int
	}
	pos := map[string]int{}
	block := map[string]int{}
	items := make([]item, len(evs))
	for i, ev := range evs {
		if _, ok := block[ev.Run]; !ok {
			block[ev.Run] = len(block) / 64
		}
		items[i] = item{ev: ev, idx: pos[ev.Run], blk: block[ev.Run]}
		pos[ev.Run]++
	}
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.blk, b.blk), cmp.Compare(a.idx, b.idx), cmp.Compare(a.ev.Type, b.ev.Type))
	})
	start := time.Now().Add(-24 * time.Hour)
	step := 24 * time.Hour / time.Duration(n)
	var msgs []ledger.Message
	var batch []event.Draft
	stream := uint64(0)
	flush := func() {
		if len(batch) > 0 {
			stream++
			signer := kit.Node
			if slices.Contains(event.AllowedRoles(batch[0].Type), event.RoleOperator) {
				signer = kit.Operator
			}
			msgs = append(msgs, kit.Message(stream, signer, batch...))
			batch = nil
		}
		if len(msgs) >= 64 {
			if _, err := store.Append(msgs); err != nil {
				b.Fatal(err)
			}
			msgs = nil
		}
	}
	for i, it := range items {
		if len(batch) > 0 && (batch[0].Type != it.ev.Type || len(batch) == 256) {
			flush()
		}
		batch = append(batch, event.Draft{ID: event.NewID(), Type: it.ev.Type, Run: it.ev.Run, Time: start.Add(time.Duration(i) * step), Data: it.ev.Data})
	}
	flush()
	if len(msgs) > 0 {
		if _, err := store.Append(msgs); err != nil {
			b.Fatal(err)
		}
	}
	return store
}

// BenchmarkEvalPassLedger500k is the evaluation pass as the leader runs
// it: reading 24 hours of a busy cluster (500k events) from the ledger
// (ReadWindow), then running every rule, and dropping the window. The
// target is at most 5 s of CPU. It reports the pass's time (s/pass and
// cpu-ns/op), the peak heap the pass added (peak-MB, sampled every 20
// ms) and what stays on the heap after it (resident-MB, live after a GC:
// the loop keeps nothing between passes).
func BenchmarkEvalPassLedger500k(b *testing.B) {
	store := busyLedger(b, 500_000)
	// The planting's compactions are not the pass's.
	poll.Eventually(b, 2*time.Minute, "the planted ledger's compactions", func() bool { return !store.Compacting() })
	ctx := context.Background()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
				}
			}
		}
	}()
	b.ResetTimer()
	cpu := ledgertest.CPUPerOp(b)
	var attempts, found int
	for range b.N {
		now := time.Now()
		tel, err := ReadWindow(ctx, store, 0, now, 0)
		if err != nil {
			b.Fatal(err)
		}
		attempts = len(tel.Attempts)
		found = len(Evaluate(DefaultRules(), tel, Input{Now: now, State: NewState()}))
	}
	b.StopTimer()
	cpu()
	close(stop)
	<-sampled
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/pass")
	b.ReportMetric(float64(int64(peak.Load())-int64(before.HeapAlloc))/(1<<20), "peak-MB")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "resident-MB")
	b.ReportMetric(float64(attempts), "attempts")
	b.ReportMetric(float64(found), "proposals")
	if attempts < 100_000 || found == 0 {
		b.Fatalf("the pass read %d attempts and found %d proposals: the window was not read", attempts, found)
	}
	// Reported (cpu-ns/op against the 5 s target), not asserted.
}
