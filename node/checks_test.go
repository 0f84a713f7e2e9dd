package node

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/outbox"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/nats-io/nats.go/jetstream"
)

// A lease whose revision does not move for the TTL is stale, whatever
// the bucket keeps; a renewal makes it live again.
func TestLeaderWatchFindsALeaseNotRenewed(t *testing.T) {
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ctx := context.Background()
	kv, err := c.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "lease_test"}) // no TTL: the key stays
	if err != nil {
		t.Fatal(err)
	}
	w := &leaderWatch{kv: kv, nc: c.NC, ttl: func() time.Duration { return 300 * time.Millisecond }}
	if err := w.probe(ctx); err == nil || !strings.Contains(err.Error(), "no orchestrator holds the lease") {
		t.Fatalf("no key: %v", err)
	}
	if _, err := kv.Put(ctx, orchestrator.LeaseKey, []byte("{")); err != nil {
		t.Fatal(err)
	}
	if err := w.probe(ctx); err == nil || !strings.Contains(err.Error(), "does not decode") {
		t.Fatalf("a value that does not decode: %v", err)
	}
	if _, err := kv.Put(ctx, orchestrator.LeaseKey, []byte(`{"leader":"ghost","incarnation":"x","epoch":9}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.probe(ctx); err != nil {
		t.Fatalf("a lease just written: %v", err)
	}
	if v, ok := w.last(); !ok || v.leader != "ghost" || v.epoch != 9 {
		t.Fatalf("last: %+v", v)
	}
	var last error
	poll.Eventually(t, 10*time.Second, "the lease stale", func() bool {
		last = w.probe(ctx)
		return last != nil
	})
	if !strings.Contains(last.Error(), "ghost (epoch 9) has not renewed its lease") {
		t.Errorf("stale lease: %v", last)
	}
	if v, _ := w.last(); v.leader != "" || v.reason != last.Error() {
		t.Errorf("last after the lease went stale: %+v", v)
	}
	if _, err := kv.Put(ctx, orchestrator.LeaseKey, []byte(`{"leader":"ghost","incarnation":"x","epoch":9}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.probe(ctx); err != nil {
		t.Errorf("renewed: %v", err)
	}
}

// Events the outbox cannot publish while connected (here: no stream
// takes their subject) fail the outbox check once they have waited the
// stall time; published, the check passes again.
func TestOutboxCheckFindsEventsNotPublished(t *testing.T) {
	srv := bustest.Server(t)
	conn := bustest.Connect(t, srv)
	ctx := context.Background()
	ids := bustest.NewIdentities(t)
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "outbox"), ids.Node(t, "node-a", event.RolePlanner), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if err := conn.JS.DeleteStream(ctx, "AGENTIC_EVENTS"); err != nil {
		t.Fatal(err)
	}
	ob.Start(conn.JS)
	d := &drainWatch{ob: ob, nc: conn.NC, stall: 200 * time.Millisecond}
	if err := d.probe(ctx); err != nil {
		t.Fatalf("empty outbox: %v", err)
	}
	if err := ob.Emit(ctx, event.MustDraft(event.AlarmRaised, "", event.AlarmData{Node: "node-a", Alarm: event.AlarmNoSpace})); err != nil {
		t.Fatal(err)
	}
	var last error
	poll.Eventually(t, 20*time.Second, "the outbox check failing", func() bool {
		last = d.probe(ctx)
		return last != nil
	})
	if !strings.Contains(last.Error(), "nothing published for") {
		t.Errorf("outbox check: %v", last)
	}
	bustest.Connect(t, srv) // makes the streams again
	poll.Eventually(t, 30*time.Second, "the outbox drained and its check passing", func() bool {
		return ob.Pending() == 0 && d.probe(ctx) == nil
	})
}

// The clock check fails only past the leeway, either way, and names the
// direction.
func TestClockCheckFailsPastTheLeeway(t *testing.T) {
	skews := map[string]time.Duration{}
	c := clockCheck("node-a", func() map[string]time.Duration { return skews })
	ctx := context.Background()
	if err := c.Probe(ctx); err != nil {
		t.Fatalf("no sample yet: %v", err)
	}
	skews["node-a"], skews["other"] = envelope.Leeway, time.Hour
	if err := c.Probe(ctx); err != nil {
		t.Fatalf("at the leeway (another signer far off): %v", err)
	}
	skews["node-a"] = envelope.Leeway + time.Second
	if err := c.Probe(ctx); err == nil || !strings.HasPrefix(err.Error(), "clock 31s ahead of the stream's (leeway 30s)") {
		t.Errorf("ahead: %v", err)
	}
	skews["node-a"] = -envelope.Leeway - 2*time.Second
	if err := c.Probe(ctx); err == nil || !strings.HasPrefix(err.Error(), "clock 32s behind the stream's") {
		t.Errorf("behind: %v", err)
	}
	if !c.Blocking || c.Alarm != event.AlarmClockSkew {
		t.Errorf("check %+v", c)
	}
}
