package follow_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/follow"
	"github.com/nats-io/nats.go/jetstream"
)

// clock is a node clock a test moves.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// publishFlood publishes n forged messages onto the events stream: garbage
// with no signer, and messages a stranger signed claiming a node's name.
func publishFlood(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	stranger := bustest.NewIdentities(t).Node(t, "exec-1", event.RoleExecutor)
	forged, _, err := envelope.Sign(stranger, []event.Draft{event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "x"})})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		data := forged
		if i%2 == 0 {
			data = fmt.Appendf(nil, "forged %d", i)
		}
		if _, err := js.PublishAsync("agentic.ev.task.started", data); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 || i == n-1 {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(60 * time.Second):
				t.Fatal("flood not acknowledged")
			}
		}
	}
}

// TestFloodOfForgeriesIsBounded: 10,000 forged messages on a real stream
// grow two independent ledgers by the same bounded number of records,
// whose counts add up to 10,000; the chain verifies; REJECT_FLOOD is raised
// and cleared once the node's clock passes a window with no flood.
func TestFloodOfForgeriesIsBounded(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	ex := ids.Node(t, "exec-1", event.RoleExecutor)
	ctx := context.Background()
	v := envelope.NewVerifier(ids.Root)

	const n = 10_000
	start := time.Now()
	publishFlood(t, conn.JS, n)
	// A valid event after the flood ends the last run: its summary is
	// written before it.
	if err := bus.PublishSigned(ctx, conn.JS, ex, event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "after"})); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)

	clk := &clock{}
	var stores []*ledger.Store
	var followers []*follow.Follower
	for range 2 {
		st, err := ledger.Open(t.TempDir(), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: v, Now: clk.now})
		if err := f.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Stop)
		stores, followers = append(stores, st), append(followers, f)
	}
	for i, st := range stores {
		poll.Eventually(t, 120*time.Second, fmt.Sprintf("ledger %d folded the flood", i), func() bool { return st.AppliedStreamSeq() == n+1 })
	}

	s0, h0 := stores[0].Head()
	s1, h1 := stores[1].Head()
	if s0 != s1 || h0 != h1 {
		t.Fatalf("two ledgers of one stream differ: %d %x and %d %x", s0, h0, s1, h1)
	}
	var full, counted uint64
	for rec, err := range stores[0].Scan(1) {
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Event.Type {
		case event.Rejected:
			full++
		case event.RejectedSummary:
			var d event.RejectedSummaryData
			if err := rec.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			counted += d.Count
		}
	}
	if full+counted != n {
		t.Fatalf("%d rejections recorded and %d counted in summaries, want %d", full, counted, n)
	}
	windows := int(elapsed/ledger.RejectWindow) + 2
	bound := uint64(windows*(2*(ledger.RejectFullPerWindow+ledger.RejectSampledPerWindow)+1) + 2)
	if s0 > bound {
		t.Fatalf("%d records for %d forgeries, want at most %d", s0, n, bound)
	}
	t.Logf("%d forgeries in %v: %d records (%d in full, %d counted), bound %d", n, elapsed, s0, full, counted, bound)
	for _, st := range stores {
		if rep, err := st.Verify(v); err != nil || !rep.OK {
			t.Fatalf("verify: %+v %v", rep, err)
		}
	}
	f := followers[0]
	if st := f.Rejections(); st.Dropped != counted || st.ByCode[event.RejectMalformed]+st.ByCode[event.RejectUnknownSigner] != n {
		t.Fatalf("Rejections() = %+v, want %d dropped and %d malformed or unknown_signer", st, counted, n)
	}
	if got := f.Stats().Rejected; got != n {
		t.Fatalf("Stats().Rejected = %d, want %d", got, n)
	}

	checks := f.Checks()
	if len(checks) != 1 || checks[0].Alarm != event.AlarmRejectFlood || checks[0].Blocking {
		t.Fatalf("checks %+v: want one non-blocking REJECT_FLOOD check", checks)
	}
	if err := checks[0].Probe(ctx); err == nil {
		t.Fatal("REJECT_FLOOD not raised after a flood")
	} else {
		t.Logf("raised: %v", err)
	}
	clk.add(ledger.RejectWindow)
	if err := checks[0].Probe(ctx); err != nil {
		t.Fatalf("REJECT_FLOOD still raised a window after the flood stopped: %v", err)
	}
}
