package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/nats-io/nats.go"
)

// Noop plan shape: noopLayers × noopWidth steps; each step depends on the
// step of its column in the layer before.
const (
	noopLayers = 40
	noopWidth  = 50
	noopSlots  = 50
)

type noopResult struct {
	took            time.Duration // submit → run.finished published
	firstAssign     time.Duration // submit → first task.assigned published
	cpu             float64       // share of all cores used meanwhile
	msgs            int           // stream messages published during the run
	decide, deliver durations     // per step: ready→assigned, assigned→started
}

// recorded is what runPlan saw of one run on the stream.
type recorded struct {
	run         string
	took        time.Duration // submit → run.finished published
	firstAssign time.Duration // submit → first task.assigned published
	cpu         float64       // share of all cores used meanwhile
	msgs        []*nats.Msg   // every stream message published during the run
}

// runPlan submits file (named name) and records every stream message until
// its run.finished; it fails unless the run succeeded with every one of
// its steps.
func runPlan(tb testing.TB, bn *benchNode, name, file string, steps int) recorded {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type arrival struct {
		at  time.Time
		msg *nats.Msg
	}
	arrivals := make(chan arrival, 8192)
	sub, err := bn.nc.Subscribe(event.SubjectAll, func(m *nats.Msg) {
		arrivals <- arrival{at: time.Now(), msg: m}
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := bn.nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	clock := startCPU()
	start := time.Now()
	var r recorded
	if r.run, err = bn.submit(ctx, name, file); err != nil {
		tb.Fatal(err)
	}
wait:
	for {
		select {
		case a := <-arrivals:
			r.msgs = append(r.msgs, a.msg)
			switch event.TypeFromSubject(a.msg.Subject) {
			case event.TaskAssigned:
				if r.firstAssign == 0 {
					r.firstAssign = a.at.Sub(start)
				}
			case event.RunFinished:
				r.took = a.at.Sub(start)
				break wait
			}
		case <-ctx.Done():
			tb.Fatalf("run %s of %s did not finish: %v", r.run, name, ctx.Err())
		}
	}
	r.cpu = clock.utilization()
	checkSucceeded(tb, ctx, bn.api, r.run, steps)
	return r
}

// runNoopPlan runs file and measures its steps' legs.
func runNoopPlan(tb testing.TB, bn *benchNode, file string, steps int) noopResult {
	tb.Helper()
	rec := runPlan(tb, bn, "noop2000.json", file, steps)
	r := noopResult{took: rec.took, firstAssign: rec.firstAssign, cpu: rec.cpu, msgs: len(rec.msgs)}
	run, kept := rec.run, rec.msgs
	tl := timeline{}
	v := envelope.NewVerifier(bn.root)
	for _, m := range kept {
		env, err := v.Verify(m.Data, m.Subject, time.Now())
		if err != nil {
			tb.Fatalf("message on %s does not verify: %v", m.Subject, err)
		}
		for _, ev := range env.Events {
			if err := tl.add(ev.Type, ev.Run, ev.Time, ev.Data); err != nil {
				tb.Fatal(err)
			}
		}
	}
	var complete int
	_, r.decide, r.deliver, complete = tl.spans()
	if complete != steps {
		tb.Fatalf("run %s: %d steps assigned and started on the stream, want %d", run, complete, steps)
	}
	return r
}

// checkSucceeded waits for the node's view of run to be final and fails
// unless it succeeded with steps steps, all succeeded.
func checkSucceeded(tb testing.TB, ctx context.Context, c *api.Client, run string, steps int) {
	tb.Helper()
	var v *api.Run
	var err error
	final := poll.WaitContext(ctx, func() bool {
		v, err = c.RunsGet(ctx, run)
		return err != nil || v.FinishedAt != nil
	})
	if err != nil {
		tb.Fatalf("runs.get %s: %v", run, err)
	}
	if final != nil {
		tb.Fatalf("run %s: view not final: %v", run, final)
	}
	if v.Status != event.RunSucceeded || len(v.Steps) != steps {
		tb.Fatalf("run %s: status %s (%s), %d steps; want succeeded, %d steps", run, v.Status, v.Reason, len(v.Steps), steps)
	}
	for _, st := range v.Steps {
		if st.Status != string(orchestrator.StepSucceeded) {
			tb.Fatalf("run %s: step %s is %s", run, st.ID, st.Status)
		}
	}
}

// noopPlan is a plan file (JSON, flat format) of layers × width noop steps;
// step l<L>-w<W> depends on l<L-1>-w<W>.
func noopPlan(layers, width int) string {
	p := event.Plan{Goal: fmt.Sprintf("noop %d×%d", layers, width)}
	for l := range layers {
		for w := range width {
			st := event.Step{ID: fmt.Sprintf("l%02d-w%02d", l, w), Kind: event.KindNoop}
			if l > 0 {
				st.DependsOn = []string{fmt.Sprintf("l%02d-w%02d", l-1, w)}
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
