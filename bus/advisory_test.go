package bus_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// TestWatchStreamsReportsChanges: updates, deletions and creations of the
// watched streams are reported, those of other streams are not, and
// nothing after stop.
func TestWatchStreamsReportsChanges(t *testing.T) {
	c := bustest.Connect(t, bustest.Server(t))
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	stop, err := bus.WatchStreams(c.NC, []string{bus.EventsStream, bus.LeaderBucketStream}, func(action, stream string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, action+" "+stream)
	})
	if err != nil {
		t.Fatal(err)
	}
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	st, err := c.JS.Stream(ctx, bus.LogsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 10
	if _, err := c.JS.UpdateStream(ctx, cfg); err != nil { // not watched
		t.Fatal(err)
	}
	st, err = c.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg = st.CachedInfo().Config
	cfg.MaxMsgs = 10
	if _, err := c.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := c.JS.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	if err := bus.RecreateStream(ctx, c.JS, bus.EventsStreamConfig(bus.DefaultEventsSettings, 0), 42); err != nil {
		t.Fatal(err)
	}
	want := []string{"UPDATED AGENTIC_EVENTS", "DELETED AGENTIC_EVENTS", "CREATED AGENTIC_EVENTS"}
	poll.Eventually(t, 10*time.Second, "the advisories", func() bool { return slices.Equal(got(), want) })
	ack, err := c.JS.Publish(ctx, event.SubjectPrefix+"test", []byte("x"))
	if err != nil || ack.Sequence != 42 {
		t.Fatalf("publish to the recreated stream: %+v %v, want sequence 42", ack, err)
	}
	// Made again meanwhile by another node: not an error, left as it is.
	if err := bus.RecreateStream(ctx, c.JS, bus.EventsStreamConfig(bus.DefaultEventsSettings, 0), 7); err != nil {
		t.Fatalf("recreate an existing stream: %v", err)
	}
	stop()
	// A subscriber of its own sees the next advisory: the stopped watch
	// must not.
	probe, err := c.NC.SubscribeSync(bus.StreamAdvisoryPrefix + "*." + bus.LeaderBucketStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.JS.DeleteKeyValue(ctx, bus.LeaderBucket); err != nil {
		t.Fatal(err)
	}
	if err := bus.RecreateLeaderBucket(ctx, c.JS, 2*time.Second, 3, 1); err != nil {
		t.Fatal(err)
	}
	st, err = c.JS.Stream(ctx, bus.LeaderBucketStream)
	if err != nil || st.CachedInfo().Config.MaxAge != 2*time.Second || bus.SettingsRevision(st.CachedInfo().Config) != 3 {
		t.Fatalf("recreated bucket %+v %v", st, err)
	}
	if _, err := probe.NextMsg(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if g := got(); !slices.Equal(g, want) {
		t.Fatalf("after stop: %v", g)
	}
}

// TestWatchStreamsOnACluster: on a NATS cluster, a watcher connected to
// one server hears of a replicated stream updated and deleted through
// another.
func TestWatchStreamsOnACluster(t *testing.T) {
	c := bustest.Cluster(t, 3)
	watcher, changer := c.Connect(t), c.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := bus.EnsureStreams(ctx, changer.JS, bus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	stop, err := bus.WatchStreams(watcher.NC, []string{bus.EventsStream}, func(action, stream string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, action+" "+stream)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	st, err := changer.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 100
	if _, err := changer.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := changer.JS.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	want := []string{"UPDATED AGENTIC_EVENTS", "DELETED AGENTIC_EVENTS"}
	poll.Eventually(t, 10*time.Second, "the advisories", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(seen, want)
	})
}
