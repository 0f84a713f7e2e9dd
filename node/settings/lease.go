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

// ClaimTimeout is the claim timeout in force: what the node's planner
// times its no_planner rejections by (the orchestrator folds the same
// setting itself, roles/orchestrator).
func (c *Cluster) ClaimTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.rec.settings.ClaimTimeout
}

// reconcileLeader compares the leader bucket with the lease TTL at rev, as
// reconcile does a stream, and returns how it differs: its TTL, and its
// revision when it is behind (a bucket without a settings revision was
// made by a version that took the TTL from the node's configuration; it
// is behind too). Apply brings it to the settings.
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
		// Applied by an administrator (Apply), as the streams are.
		c.warnOnce(fmt.Sprintf("behind/%s/%d/%d", bus.LeaderBucketStream, hrev, rev), "leader bucket is behind the cluster settings in force: an administrator applies them",
			"stream", bus.LeaderBucketStream, "stream_revision", hrev, "in_force", rev, "hint", applyHint(nil))
		d := []Drift{revisionDrift(bus.LeaderBucketStream, rev, have)}
		if have.MaxAge != ttl {
			d = append(d, Drift{Stream: bus.LeaderBucketStream, Field: "max_age", Expected: age(ttl), Actual: age(have.MaxAge)})
		}
		return d, nil
	}
	if have.MaxAge != ttl {
		return []Drift{{Stream: bus.LeaderBucketStream, Field: "max_age", Expected: age(ttl), Actual: age(have.MaxAge)}}, nil
	}
	return []Drift{}, nil
}
