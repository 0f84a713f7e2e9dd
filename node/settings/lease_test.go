package settings_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go/jetstream"
)

func withLease(rev uint64, ttl time.Duration) event.ClusterSettingsData {
	d := settings.Default().Data()
	d.Revision = rev
	d.Lease.TTL = event.Duration(ttl)
	return d
}

// TestLeaseTTLFolds: the lease TTL is a setting like the others; settings
// recorded before it existed take the default, and one out of bounds is
// refused with the rest of the event.
func TestLeaseTTLFolds(t *testing.T) {
	var l ledger
	c := settings.New(settings.Config{})
	if got := c.LeaseTTL(); got != event.DefaultLeaseTTL {
		t.Fatalf("default lease TTL %s, want %s", got, event.DefaultLeaseTTL)
	}
	old := settings.Default().Data()
	old.Revision, old.Lease = 1, event.LeaseSettingsData{}
	c.Fold(l.event(event.ClusterSettings, old))
	if got := c.LeaseTTL(); got != event.DefaultLeaseTTL || c.InForce().Revision != 1 {
		t.Fatalf("settings without a lease TTL: %s at revision %d, want the default at 1", got, c.InForce().Revision)
	}
	c.Fold(l.event(event.ClusterSettings, withLease(2, 4*time.Second)))
	if got := c.LeaseTTL(); got != 4*time.Second {
		t.Fatalf("lease TTL %s, want 4s", got)
	}
	for _, bad := range []time.Duration{100 * time.Millisecond, 2 * time.Minute} {
		c.Fold(l.event(event.ClusterSettings, withLease(3, bad)))
		if got := c.LeaseTTL(); got != 4*time.Second || c.InForce().Revision != 2 {
			t.Fatalf("a lease TTL of %s was taken: %s at revision %d", bad, got, c.InForce().Revision)
		}
	}
	if _, err := settings.FromData(withLease(3, 100*time.Millisecond)); err == nil || !strings.Contains(err.Error(), "lease ttl 100ms: want 500ms to 1m") {
		t.Fatalf("FromData error %v", err)
	}
	if got := settings.Default().Data().Lease.TTL.Std(); got != event.DefaultLeaseTTL {
		t.Fatalf("the defaults carry lease TTL %s", got)
	}
}

func bucket(t *testing.T, k *kit) jetstream.StreamConfig { return k.stream(t, bus.LeaderBucketStream) }

// TestLeaseTTLIsAppliedToTheLeaderBucket: the leader bucket's TTL follows
// the setting in force, like a stream: behind it until an administrator
// applies it; changed by hand it is drift.
func TestLeaseTTLIsAppliedToTheLeaderBucket(t *testing.T) {
	k := newKit(t)
	if b := bucket(t, k); b.MaxAge != event.DefaultLeaseTTL || bus.SettingsRevision(b) != 0 {
		t.Fatalf("bucket made with TTL %s at revision %d, want the default at 0", b.MaxAge, bus.SettingsRevision(b))
	}
	k.c.Fold(k.l.event(event.ClusterSettings, withLease(1, 4*time.Second)))
	k.c.Settled(true)
	in := k.checked(t, 1)
	want := []settings.Drift{behind(bus.LeaderBucketStream, 1, "0"), {Stream: bus.LeaderBucketStream, Field: "max_age", Expected: "4s", Actual: "1.5s"}}
	if got := k.c.Drift()[bus.LeaderBucketStream]; !slices.Equal(got, want) || len(in.Drift) != 4 {
		t.Fatalf("bucket drift %+v, want %+v (all: %+v)", got, want, in.Drift)
	}
	if got := k.c.LeaseTTL(); got != 4*time.Second {
		t.Fatalf("lease TTL in force %s, want 4s whatever the bucket says", got)
	}
	if b := bucket(t, k); b.MaxAge != event.DefaultLeaseTTL {
		t.Fatalf("the node updated the bucket: TTL %s", b.MaxAge)
	}
	k.apply(t)
	b := bucket(t, k)
	if b.MaxAge != 4*time.Second || b.Duplicates != 4*time.Second || bus.SettingsRevision(b) != 1 || b.MaxMsgsPerSubject != 1 {
		t.Fatalf("bucket %+v, want TTL and duplicate window 4s at revision 1, history kept", b)
	}
	kv, err := k.js.KeyValue(context.Background(), bus.LeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(context.Background()); err != nil || st.TTL() != 4*time.Second {
		t.Fatalf("bucket status TTL %v (%v), want 4s", st, err)
	}

	// A hand change is drift, reported and left.
	b.MaxAge = 9 * time.Second
	if _, err := k.js.UpdateStream(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	k.c.Check(context.Background())
	drift := settings.Drift{Stream: bus.LeaderBucketStream, Field: "max_age", Expected: "4s", Actual: "9s"}
	if in := k.c.InForce(); !slices.Equal(in.Drift, []settings.Drift{drift}) {
		t.Fatalf("drift %+v, want %+v", in.Drift, drift)
	}
	if got := bucket(t, k).MaxAge; got != 9*time.Second {
		t.Fatalf("drift corrected: %s", got)
	}
	// A newer revision is behind again until applied.
	k.c.Fold(k.l.event(event.ClusterSettings, withLease(2, 2*time.Second)))
	k.c.Settled(true)
	k.checked(t, 2)
	want = []settings.Drift{behind(bus.LeaderBucketStream, 2, "1"), {Stream: bus.LeaderBucketStream, Field: "max_age", Expected: "2s", Actual: "9s"}}
	if got := k.c.Drift()[bus.LeaderBucketStream]; !slices.Equal(got, want) {
		t.Fatalf("bucket drift at revision 2 %+v, want %+v", got, want)
	}
	k.apply(t)
	if b := bucket(t, k); b.MaxAge != 2*time.Second || bus.SettingsRevision(b) != 2 {
		t.Fatalf("after revision 2 applied: bucket TTL %s at revision %d", b.MaxAge, bus.SettingsRevision(b))
	}
}

// TestBucketOfAnOlderVersionTakesTheSetting: a bucket an older version
// made (TTL from a node's configuration, no settings revision) is behind
// the settings in force, even the defaults, and Apply brings it to them.
func TestBucketOfAnOlderVersionTakesTheSetting(t *testing.T) {
	k := newKit(t)
	ctx := context.Background()
	if err := k.js.DeleteKeyValue(ctx, bus.LeaderBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := k.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bus.LeaderBucket, TTL: 5 * time.Second, History: 1}); err != nil {
		t.Fatal(err)
	}
	k.c.Settled(true)
	want := []settings.Drift{behind(bus.LeaderBucketStream, 0, "none"), {Stream: bus.LeaderBucketStream, Field: "max_age", Expected: "1.5s", Actual: "5s"}}
	if in := k.checked(t, 0); !slices.Equal(in.Drift, want) {
		t.Fatalf("drift %+v, want %+v", in.Drift, want)
	}
	if b := bucket(t, k); b.MaxAge != 5*time.Second {
		t.Fatalf("the node updated the bucket: TTL %s", b.MaxAge)
	}
	applied := k.apply(t)
	if a := applied[2]; a.Stream != bus.LeaderBucketStream || !a.Updated || applied[0].Updated || applied[1].Updated {
		t.Fatalf("applied %+v, want the bucket alone updated", applied)
	}
	if b := bucket(t, k); b.MaxAge != event.DefaultLeaseTTL || bus.SettingsRevision(b) != 0 || b.Metadata[bus.SettingsRevisionKey] != "0" {
		t.Fatalf("bucket %+v, want the default TTL at revision 0", b)
	}
}
