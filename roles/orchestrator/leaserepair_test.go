package orchestrator

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// highEpoch is the epoch of the cluster's last election in the repair
// tests: a long-lived cluster's, far above any revision of the bucket.
const highEpoch = 1_000_000

// leaseFaults are the ways the lease key goes missing under the cluster.
var leaseFaults = []struct {
	name   string
	inject func(t *testing.T, k *leaseKit)
}{
	{"key deleted", func(t *testing.T, k *leaseKit) {
		if err := k.kv.Delete(context.Background(), LeaseKey); err != nil {
			t.Fatal(err)
		}
	}},
	{"key purged", func(t *testing.T, k *leaseKit) {
		if err := k.kv.Purge(context.Background(), LeaseKey); err != nil {
			t.Fatal(err)
		}
	}},
	{"bucket purged", func(t *testing.T, k *leaseKit) {
		st, err := k.js.Stream(context.Background(), bus.LeaderBucketStream)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Purge(context.Background()); err != nil {
			t.Fatal(err)
		}
	}},
	{"bucket made again", func(t *testing.T, k *leaseKit) {
		ctx := context.Background()
		if err := k.js.DeleteKeyValue(ctx, bus.LeaderBucket); err != nil {
			t.Fatal(err)
		}
		if err := bus.EnsureStreams(ctx, k.js, bus.StreamConfig{Replicas: 1}); err != nil {
			t.Fatal(err)
		}
	}},
}

// repairDeadline is the failure deadline of the repair tests, in TTLs: a
// generous bound, not a measure (the lease is won again within about one
// renewal or poll interval; node/bench measures failover).
const repairDeadline = 10

// leaderAbove waits until one of os leads with an epoch above floor, the
// key records it, and returns it.
func leaderAbove(t *testing.T, k *leaseKit, ttl time.Duration, floor uint64, os ...*Orchestrator) *Orchestrator {
	t.Helper()
	var won *Orchestrator
	poll.Eventually(t, repairDeadline*ttl, "a leader above the last epoch", func() bool {
		for _, o := range os {
			if e := o.Leader(); e > floor {
				if v, _ := k.holder(t); v.Leader == o.env.Node && v.Epoch == e {
					won = o
					return true
				}
			}
		}
		return false
	})
	return won
}

// TestLeaseRepairedWhileLeading: the lease key deleted, purged, or its
// bucket purged or made again under a leader whose epoch is high: the
// leader's renewal finds the key gone and it — or the standby — wins the
// lease again with the next epoch above the ledger's, within the failure
// deadline (the issue saw minutes: a new lease climbing one revision per
// renewal).
func TestLeaseRepairedWhileLeading(t *testing.T) {
	for _, f := range leaseFaults {
		t.Run(f.name, func(t *testing.T) {
			k := newLeaseKit(t)
			k.l.add(event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: highEpoch}, Leader: "old"}), "old")
			ttl := ttlOf(time.Second)
			a, _, ra := k.start(t, node{name: "a", settings: ttl})
			poll.Eventually(t, waitLong, "a leading above the ledger's epoch", leads(a, highEpoch+1))
			b, _, rb := k.start(t, node{name: "b", settings: ttl})
			defer func() {
				if t.Failed() {
					t.Log("a:", ra.Messages(slog.LevelDebug))
					t.Log("b:", rb.Messages(slog.LevelDebug))
				}
			}()
			at := time.Now()
			f.inject(t, k)
			won := leaderAbove(t, k, time.Second, highEpoch+1, a, b)
			t.Logf("%s: %s leads at epoch %d, %v after the fault", f.name, won.env.Node, won.Leader(), time.Since(at).Round(time.Millisecond))
			if won.Leader() != highEpoch+2 {
				t.Fatalf("%s leads at epoch %d, want %d (the next above the ledger's)", won.env.Node, won.Leader(), highEpoch+2)
			}
			assertOneLeader(t, k, a, b)
		})
	}
}

// TestLeaseRepairedAfterRestart: the whole cluster stopped as kill -9
// would (the lease left in place), the key then deleted, purged, or its
// bucket purged or made again, and the orchestrators restarted: one wins
// the lease with the next epoch above the ledger's, within the failure
// deadline.
func TestLeaseRepairedAfterRestart(t *testing.T) {
	for _, f := range leaseFaults {
		t.Run(f.name, func(t *testing.T) {
			k := newLeaseKit(t)
			k.l.add(event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: highEpoch}, Leader: "old"}), "old")
			ttl := ttlOf(time.Second)
			a1, _, _ := k.start(t, node{name: "a", inc: "a-1", settings: ttl})
			poll.Eventually(t, waitLong, "a-1 leading above the ledger's epoch", leads(a1, highEpoch+1))
			crash(t, a1)
			f.inject(t, k)
			at := time.Now()
			a2, _, _ := k.start(t, node{name: "a", inc: "a-2", settings: ttl})
			b, _, _ := k.start(t, node{name: "b", inc: "b-2", settings: ttl})
			won := leaderAbove(t, k, time.Second, highEpoch+1, a2, b)
			t.Logf("%s: %s leads at epoch %d, %v after the restart", f.name, won.env.Node, won.Leader(), time.Since(at).Round(time.Millisecond))
			if won.Leader() != highEpoch+2 {
				t.Fatalf("%s leads at epoch %d, want %d", won.env.Node, won.Leader(), highEpoch+2)
			}
			assertOneLeader(t, k, a2, b)
		})
	}
}

// TestStaleHolderNotBelievedForever: a lease key naming a holder that
// never renews — in a bucket that keeps keys longer than the TTL, as one
// whose TTL was not brought to the setting yet does — is taken by a
// standby once its revision has not moved for a TTL, above both the
// ledger's epoch and the one the key records.
func TestStaleHolderNotBelievedForever(t *testing.T) {
	k := newLeaseKit(t)
	ctx := context.Background()
	st, err := k.js.Stream(ctx, bus.LeaderBucketStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.js.UpdateStream(ctx, bus.WithLeaseTTL(st.CachedInfo().Config, time.Hour, 0)); err != nil {
		t.Fatal(err)
	}
	k.l.add(event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: highEpoch}, Leader: "ghost"}), "ghost")
	v, _ := json.Marshal(leaseValue{Leader: "ghost", Incarnation: "ghost-1", Epoch: highEpoch + 5})
	if _, err := k.kv.Put(ctx, LeaseKey, v); err != nil {
		t.Fatal(err)
	}
	a, _, _ := k.start(t, node{name: "a", settings: ttlOf(time.Second)})
	won := leaderAbove(t, k, time.Second, highEpoch, a)
	if won.Leader() != highEpoch+6 {
		t.Fatalf("a leads at epoch %d, want %d (above the stale key's)", won.Leader(), highEpoch+6)
	}
}

// assertOneLeader checks that exactly one of os leads, at the epoch the
// ledger's last election and the lease key record.
func assertOneLeader(t *testing.T, k *leaseKit, os ...*Orchestrator) {
	t.Helper()
	// The new leader's election reaches the others' cores through their
	// owners a moment after it leads: a stale leader steps down once it
	// has folded it (checkElection). Give it that moment, not more.
	_ = poll.Wait(time.Second, func() bool {
		n := 0
		for _, o := range os {
			if o.Leader() != 0 {
				n++
			}
		}
		return n == 1
	})
	var leading []string
	var epoch uint64
	for _, o := range os {
		if e := o.Leader(); e != 0 {
			leading, epoch = append(leading, o.env.Node), e
		}
	}
	els := k.l.elections()
	last := els[len(els)-1]
	v, _ := k.holder(t)
	if len(leading) != 1 || last != (election{epoch, leading[0]}) || v.Leader != leading[0] || v.Epoch != epoch {
		t.Fatalf("leading %v, last election %+v, lease %+v: want one leader, elected and holding the key", leading, last, v)
	}
	if slices.ContainsFunc(els[:len(els)-1], func(e election) bool { return e.Epoch >= epoch }) {
		t.Fatalf("elections %v: an earlier one at or above the last", els)
	}
}

// LeaseHolder reads the lease a leader holds, none once it is deleted,
// and refuses a value that is not a lease.
func TestLeaseHolder(t *testing.T) {
	k := newLeaseKit(t)
	ctx := context.Background()
	if h, e, _, err := LeaseHolder(ctx, k.kv); err != nil || h != "" || e != 0 {
		t.Fatalf("LeaseHolder of an empty bucket = %q, %d, %v; want none", h, e, err)
	}
	a, _, _ := k.start(t, node{name: "a", settings: ttlOf(time.Second)})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	h, e, age, err := LeaseHolder(ctx, k.kv)
	if err != nil || h != "a" || e != 1 || age > time.Minute {
		t.Fatalf("LeaseHolder = %q, %d, %v, %v; want a at epoch 1, written lately", h, e, age, err)
	}
	stop(t, a)
	if h, _, _, err := LeaseHolder(ctx, k.kv); err != nil || h != "" {
		t.Fatalf("LeaseHolder after the lease was released = %q, %v; want none", h, err)
	}
	if _, err := k.kv.Put(ctx, LeaseKey, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LeaseHolder(ctx, k.kv); err == nil || !strings.Contains(err.Error(), "not a lease") {
		t.Fatalf("LeaseHolder of a bad value = %v, want an error saying so", err)
	}
}
