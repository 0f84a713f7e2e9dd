package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// LeaseKey is the key of the leader lease in the leader bucket.
const LeaseKey = "orchestrator"

// leaseValue is what the lease key holds.
type leaseValue struct {
	Leader      string `json:"leader"`
	Incarnation string `json:"incarnation"`
	Epoch       uint64 `json:"epoch"`
}

// lease is one orchestrator's view of the leader lease. The bucket's TTL
// expires a lease that is not renewed; the epoch of a leadership is the
// bucket revision of the write that won it, so epochs only grow.
type lease struct {
	kv          jetstream.KeyValue
	node        string
	incarnation string
	epoch       uint64 // 0 when not leader
	rev         uint64 // revision of our last write
}

// acquire tries to become leader. It returns true with l.epoch set when it
// won. A lease held by this node's previous incarnation (a restart before
// the TTL ran out) is taken over at once with a new epoch.
func (l *lease) acquire(ctx context.Context) (bool, error) {
	v := leaseValue{Leader: l.node, Incarnation: l.incarnation}
	b, _ := json.Marshal(v)
	rev, err := l.kv.Create(ctx, LeaseKey, b)
	if err == nil {
		return l.won(ctx, rev)
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, fmt.Errorf("orchestrator: lease create: %w", err)
	}
	e, err := l.kv.Get(ctx, LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil // expired between the two calls: try next tick
	}
	if err != nil {
		return false, fmt.Errorf("orchestrator: lease read: %w", err)
	}
	var cur leaseValue
	if json.Unmarshal(e.Value(), &cur) != nil || cur.Leader != l.node || cur.Incarnation == l.incarnation {
		return false, nil
	}
	rev, err = l.kv.Update(ctx, LeaseKey, b, e.Revision())
	if err != nil {
		return false, nil // someone else moved first
	}
	return l.won(ctx, rev)
}

// won records the epoch in the lease value so observers can read it.
func (l *lease) won(ctx context.Context, rev uint64) (bool, error) {
	l.epoch, l.rev = rev, rev
	if err := l.renew(ctx); err != nil {
		l.epoch = 0
		return false, err
	}
	return true, nil
}

// renew extends the lease; an error means leadership is lost.
func (l *lease) renew(ctx context.Context) error {
	b, _ := json.Marshal(leaseValue{Leader: l.node, Incarnation: l.incarnation, Epoch: l.epoch})
	rev, err := l.kv.Update(ctx, LeaseKey, b, l.rev)
	if err != nil {
		return fmt.Errorf("orchestrator: lease renew: %w", err)
	}
	l.rev = rev
	return nil
}

// release deletes the lease if we hold it, so a standby can take over
// without waiting for the TTL.
func (l *lease) release(ctx context.Context) {
	if l.epoch == 0 {
		return
	}
	_ = l.kv.Delete(ctx, LeaseKey, jetstream.LastRevision(l.rev))
	l.epoch = 0
}
