package bus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LeaderBucketStream is the stream that holds the leader bucket.
const LeaderBucketStream = "KV_" + LeaderBucket

// leaderDuplicates is the duplicate window of a bucket: its TTL, at most
// 2 minutes, as nats.go sets it when it creates one.
func leaderDuplicates(ttl time.Duration) time.Duration { return min(ttl, 2*time.Minute) }

// ensureLeaderBucket creates the leader bucket with lease TTL ttl at
// cluster settings revision rev unless it exists. An existing bucket is
// left as it is: ledger nodes bring its TTL to the cluster setting
// (node/settings), and a start never lowers the replicas an operator gave
// it.
func ensureLeaderBucket(ctx context.Context, js jetstream.JetStream, ttl time.Duration, rev uint64, replicas int) error {
	_, err := js.Stream(ctx, LeaderBucketStream)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: bucket %s: %w", LeaderBucket, err)
	}
	_, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      LeaderBucket,
		Description: "orchestrator leader lease and epoch",
		TTL:         ttl,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Metadata:    map[string]string{SettingsRevisionKey: strconv.FormatUint(rev, 10)},
	})
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
		return fmt.Errorf("bus: create bucket %s: %w", LeaderBucket, err)
	}
	return nil // made here, or by another node meanwhile
}

// WithLeaseTTL returns the leader bucket's stream configuration c with the
// lease TTL ttl (its max age, and its duplicate window as nats.go makes
// it) at cluster settings revision rev; every other field is kept.
func WithLeaseTTL(c jetstream.StreamConfig, ttl time.Duration, rev uint64) jetstream.StreamConfig {
	c.MaxAge = ttl
	c.Duplicates = leaderDuplicates(ttl)
	c.Metadata = maps.Clone(c.Metadata)
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	c.Metadata[SettingsRevisionKey] = strconv.FormatUint(rev, 10)
	return c
}
