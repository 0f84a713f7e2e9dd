package bench

import (
	"context"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go"
)

// TestNoopResultsBatched guards figure (c)'s main lever: an executor packs
// the results of the noop steps of one assignment message into two stream
// messages (every task.started, then every task.finished), not two per
// step. Each of those messages costs a JetStream fsync and a signature
// check in every ledger; unbatched, a 2,000-step run put 4,000 of its
// 4,070 messages on the stream and ran at a third of the speed.
func TestNoopResultsBatched(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	const layers, width = 4, 20
	bn := startNode(t, width)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	counts := make(chan event.Type, 1024)
	sub, err := bn.nc.Subscribe(event.SubjectAll, func(m *nats.Msg) { counts <- event.TypeFromSubject(m.Subject) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := bn.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	run, err := bn.submit(ctx, "batched.json", noopPlan(layers, width))
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[event.Type]int{}
	for msgs[event.RunFinished] == 0 {
		select {
		case typ := <-counts:
			msgs[typ]++
		case <-ctx.Done():
			t.Fatalf("run %s did not finish; messages so far %v", run, msgs)
		}
	}
	checkSucceeded(t, ctx, bn.api, run, layers*width)
	assigned := msgs[event.TaskAssigned]
	if assigned == 0 || msgs[event.TaskStarted] > assigned || msgs[event.TaskFinished] > assigned {
		t.Errorf("messages by type %v: want at most one task.started and one task.finished message per task.assigned message", msgs)
	}
}
