package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
)

// BenchmarkFold measures what the node's follower pays to fold one event
// into a role that runs (b.N goal.submitted, then a Read that waits for
// all of them): ns/op is per event, folded.
func BenchmarkFold(b *testing.B) {
	k := newLeaseKit(b)
	o := New(roles.Env{Node: "o1", Emit: roles.EmitterFunc(func(context.Context, ...event.Draft) error { return nil }),
		Logger: slog.New(slog.DiscardHandler)}, Config{KV: k.kv, Incarnation: "x1"})
	if err := o.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer o.Stop(context.Background())
	data, _ := json.Marshal(event.GoalSubmittedData{Goal: "g"})
	evs := make([]event.Event, b.N)
	for i := range evs {
		seq := uint64(i + 1)
		evs[i] = event.Event{Seq: seq, StreamSeq: seq, ID: fmt.Sprintf("ev-%d", seq), Type: event.GoalSubmitted,
			Run: fmt.Sprintf("r%d", i), Node: "op", Time: time.Now().UTC(), Subject: event.Subject(event.GoalSubmitted, ""), Data: data}
	}
	b.ResetTimer()
	for _, ev := range evs {
		o.Fold(ev)
	}
	o.Read(func(*State) {})
}
