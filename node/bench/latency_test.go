package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
)

// Pacing of figure (d): one 1-step run every latencyEvery for
// latencyRuns runs, i.e. 100 steps/s for 5 s.
const (
	latencyRuns  = 500
	latencyEvery = 10 * time.Millisecond
)

// latencyPlan is the plan of each run: one noop step.
const latencyPlan = `{"goal": "one noop step", "steps": [{"id": "only", "kind": "noop"}]}`

// paced is what paceRuns measured.
type paced struct {
	dispatch, decide, deliver durations // per step, from the ledger
	rate                      float64   // runs submitted per second
}

// paceRuns submits runs 1-step runs, one every every, waits until every
// run has finished, and returns the latencies read from the ledger.
func paceRuns(tb testing.TB, bn *benchNode, runs int, every time.Duration) paced {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Count run.finished events as they are published (a message may
	// carry several).
	var finished atomic.Int64
	allDone := make(chan struct{})
	verifier := envelope.NewVerifier(bn.root)
	sub, err := bn.nc.Subscribe(event.Subject(event.RunFinished, ""), func(m *nats.Msg) {
		env, err := verifier.Verify(m.Data, m.Subject, time.Now())
		if err != nil {
			return
		}
		for _, ev := range env.Events {
			var d event.RunFinishedData
			if ev.Decode(&d) == nil && d.Status == event.RunSucceeded && finished.Add(1) == int64(runs) {
				close(allDone)
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := bn.nc.Flush(); err != nil {
		tb.Fatal(err)
	}

	tick := time.NewTicker(every)
	defer tick.Stop()
	start := time.Now()
	for i := range runs {
		if _, err := bn.submit(ctx, "one-step.json", latencyPlan); err != nil {
			tb.Fatalf("run %d: %v", i, err)
		}
		if i < runs-1 {
			<-tick.C
		}
	}
	var p paced
	p.rate = float64(runs-1) / time.Since(start).Seconds()
	select {
	case <-allDone:
	case <-ctx.Done():
		tb.Fatalf("%d of %d runs succeeded: %v", finished.Load(), runs, ctx.Err())
	}

	tl := timeline{}
	for l, err := range bn.api.AuditLines(ctx, api.AuditRequest{Limit: 200}) {
		if err != nil {
			tb.Fatalf("audit: %v", err)
		}
		if err := tl.add(event.Type(l.Type), l.Run, l.Time, l.Data); err != nil {
			tb.Fatal(err)
		}
	}
	var n int
	p.dispatch, p.decide, p.deliver, n = tl.spans()
	if n != runs {
		tb.Fatalf("ledger holds %d assigned-and-started steps, want %d", n, runs)
	}
	return p
}
