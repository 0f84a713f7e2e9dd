package settings

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// LeaseTTL is the leader lease TTL in force: what every orchestrator of
// the node times itself by (orchestrator.LeaseSettings).
func (c *Cluster) LeaseTTL() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.rec.settings.LeaseTTL
}

// reconcileLeader brings the leader bucket to the lease TTL at rev, as
// reconcile does a stream, and returns how its TTL differs from ttl. A
// bucket without a settings revision was made by a version that took the
// TTL from the node's configuration: it is brought to the settings too
// (the bucket holds only the lease, which a TTL change cannot lose).
func (c *Cluster) reconcileLeader(ctx context.Context, rev uint64, ttl time.Duration) ([]Drift, error) {
	st, err := c.cfg.JS.Stream(ctx, bus.LeaderBucketStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return []Drift{{Stream: bus.LeaderBucketStream, Field: fieldExists, Expected: "true", Actual: "false"}}, nil
	}
	if err != nil {
		return nil, err
	}
	have := st.CachedInfo().Config
	_, recorded := have.Metadata[bus.SettingsRevisionKey]
	switch hrev := bus.SettingsRevision(have); {
	case hrev > rev:
		c.warnOnce(fmt.Sprintf("newer/%s/%d/%d", bus.LeaderBucketStream, hrev, rev), "stream carries a cluster settings revision this ledger has not folded yet; not compared",
			"stream", bus.LeaderBucketStream, "stream_revision", hrev, "in_force", rev)
		return nil, nil
	case hrev < rev || !recorded:
		info, err := c.cfg.JS.UpdateStream(ctx, bus.WithLeaseTTL(have, ttl, rev))
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			c.warnOnce(fmt.Sprintf("apply/%s/%d", bus.LeaderBucketStream, rev), "cannot apply the cluster settings to the leader bucket",
				"stream", bus.LeaderBucketStream, "revision", rev, "err", err, "hint", applyHint(err))
			break
		}
		c.log.Info("cluster settings applied to the leader bucket", "stream", bus.LeaderBucketStream, "revision", rev, "from_revision", hrev, "lease_ttl", ttl)
		have = info.CachedInfo().Config
	}
	if have.MaxAge != ttl {
		return []Drift{{Stream: bus.LeaderBucketStream, Field: "max_age", Expected: age(ttl), Actual: age(have.MaxAge)}}, nil
	}
	return []Drift{}, nil
}
