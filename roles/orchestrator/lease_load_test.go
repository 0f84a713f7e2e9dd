package orchestrator

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/nats-io/nats.go/jetstream"
)

// slowKV is the real leader bucket behind a server that answers late, as
// the embedded server of a node busy with other work does: every read and
// write waits delay first (or gives up with its context). lostReply makes
// the next Update apply but answer as if its reply never came in time.
type slowKV struct {
	jetstream.KeyValue
	delay     time.Duration
	lostReply atomic.Bool
}

func (s *slowKV) wait(ctx context.Context) error {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *slowKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.KeyValue.Get(ctx, key)
}

func (s *slowKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := s.wait(ctx); err != nil {
		return 0, err
	}
	r, err := s.KeyValue.Update(ctx, key, value, rev)
	if err == nil && s.lostReply.CompareAndSwap(true, false) {
		return 0, context.DeadlineExceeded
	}
	return r, err
}

func (s *slowKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if err := s.wait(ctx); err != nil {
		return 0, err
	}
	return s.KeyValue.Create(ctx, key, value, opts...)
}

// A leader whose bucket answers each read and write 350 ms late — a
// renewal takes 700 ms, more than the time between renewals (TTL/3) but
// well within the TTL — keeps its lease: a busy but live node is not
// deposed by its own slowness.
func TestSlowRenewalsKeepTheLease(t *testing.T) {
	k := newLeaseKit(t)
	k.kv = &slowKV{KeyValue: k.kv, delay: 350 * time.Millisecond}
	a, _, rec := k.start(t, node{name: "a", settings: ttlOf(1500 * time.Millisecond)})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	_, rev := k.holder(t)
	// A dozen slow renewals (each a revision of the lease key): a lost
	// lease would show as a new epoch and a "leadership lost" line.
	poll.Eventually(t, 3*waitLong, "a dozen renewals", func() bool { _, r := k.holder(t); return r >= rev+12 })
	if lost := rec.Find("leadership lost"); len(lost) != 0 || a.Leader() != 1 {
		t.Fatalf("a leads at epoch %d; leadership lost %d times", a.Leader(), len(lost))
	}
}

// A renewal that the bucket applied but whose answer came too late leaves
// the key at a revision the leader did not see, holding its own value: the
// next renewal recognises its write and keeps the lease, at the same epoch.
func TestRenewalAppliedButUnconfirmedKeepsTheLease(t *testing.T) {
	k := newLeaseKit(t)
	slow := &slowKV{KeyValue: k.kv}
	k.kv = slow
	a, _, rec := k.start(t, node{name: "a", settings: ttlOf(1500 * time.Millisecond)})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	_, rev := k.holder(t)
	slow.lostReply.Store(true)
	poll.Eventually(t, waitLong, "the unconfirmed renewal applied", func() bool { return !slow.lostReply.Load() })
	poll.Eventually(t, waitLong, "a renewal after it", func() bool { _, r := k.holder(t); return r >= rev+2 })
	if lost := rec.Find("leadership lost"); len(lost) != 0 || a.Leader() != 1 {
		t.Fatalf("a leads at epoch %d; leadership lost %d times", a.Leader(), len(lost))
	}
}
