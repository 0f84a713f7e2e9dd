package bench

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Baseline shape: what FIELD-NOTES.md measured JetStream with.
const (
	baselineMsgs    = 20000
	baselineSize    = 256
	baselineWindow  = 4096
	baselineSubject = "agentic.ev.bench.raw"
)

// publishBaseline starts its own server, publishes n messages with
// PublishAsync and waits for every acknowledgement. It fails the benchmark
// unless all n were acknowledged and stored. The server is stopped before
// it returns, so a following measurement has the machine to itself.
func publishBaseline(tb testing.TB, n int) (int, time.Duration) {
	tb.Helper()
	s := startServer(tb)
	defer s.stop()
	nc := s.connect(tb)
	defer nc.Close()
	var failed atomic.Int64
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(baselineWindow),
		jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) { failed.Add(1) }),
	)
	if err != nil {
		tb.Fatal(err)
	}
	payload := make([]byte, baselineSize)
	_, _ = rand.Read(payload)

	start := time.Now()
	for range n {
		if _, err := js.PublishAsync(baselineSubject, payload, jetstream.WithStallWait(30*time.Second)); err != nil {
			tb.Fatalf("publish async: %v", err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		tb.Fatalf("baseline: %d acknowledgements missing after 2m", js.PublishAsyncPending())
	}
	took := time.Since(start)

	if f := failed.Load(); f > 0 {
		tb.Fatalf("baseline: %d of %d publishes failed", f, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.conn.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if info.State.Msgs != uint64(n) {
		tb.Fatalf("baseline: stream holds %d messages, published %d", info.State.Msgs, n)
	}
	return n, took
}
