package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	gossip "github.com/agentic-dev/agentic/internal/member"
	"github.com/nats-io/nats.go/jetstream"
)

// LeaseKey is the key of the leader lease in the leader bucket.
const LeaseKey = "orchestrator"

// LeaseSettings gives the leader lease TTL in force: the cluster setting
// as the node's ledger folded it (node/settings.Cluster), the same for
// every orchestrator, never a node's own configuration.
type LeaseSettings interface {
	// LeaseTTL is the TTL in force (event.DefaultLeaseTTL while the ledger
	// records none).
	LeaseTTL() time.Duration
}

// renewEvery is how often the leader renews its lease: three times per
// TTL. A renewal may take until the lease runs out by the leader's clock
// (renewDeadline), not just until the next one is due: on a node whose
// CPUs are busy (large model answers parsed, a long fold) the embedded
// JetStream server answers a read or write of the bucket hundreds of
// milliseconds late, and a renewal that lands late but within the TTL
// keeps the lease. With the default TTL of 1.5 s the leader starts a
// renewal 500 ms after the last one that extended it, and that renewal
// (or its retries, every pollEvery) has the remaining second.
func renewEvery(ttl time.Duration) time.Duration { return ttl / 3 }

// renewDeadline is how long a renewal sent now may take: until the lease
// written at renewed runs out (the bucket's TTL counts from the write,
// which is after renewed), and at least pollEvery.
func renewDeadline(renewed time.Time, ttl time.Duration) time.Duration {
	return max(time.Until(renewed.Add(ttl)), pollEvery(ttl))
}

// pollEvery is how often a standby looks at the lease: ten times per TTL,
// and at least four times a second. It bounds how late a standby takes
// over after a lease expired, was released, or its holder was reported
// dead.
func pollEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 10*time.Millisecond), 250*time.Millisecond)
}

// leaseValue is what the lease key holds: who holds it, which process, and
// the epoch it won.
type leaseValue struct {
	Leader      string `json:"leader"`
	Incarnation string `json:"incarnation"`
	Epoch       uint64 `json:"epoch"`
}

// leaseState is what the lease loop shares with the rest of the role.
type leaseState struct {
	// kick wakes the loop: an election or new settings folded, the node
	// live.
	kick chan struct{}
	// live is set once the node is live (the loop competes only then).
	live atomic.Bool
	// keep makes Stop leave the lease in place, as a killed process does
	// (tests and benchmarks of failover).
	keep atomic.Bool
	// ttl is the TTL the loop times itself by, as it last read it.
	ttl atomic.Int64
}

func newLeaseState() leaseState { return leaseState{kick: make(chan struct{}, 1)} }

func (s *leaseState) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// leaseFolded wakes the lease loop after a fold that may change what it
// does: an election (its own, accepted or not, or a newer leader's) or
// new cluster settings (the TTL).
func (o *Orchestrator) leaseFolded(ev event.Event) {
	if ev.Type == event.LeaderElected || ev.Type == event.ClusterSettings {
		o.lease.wake()
	}
}

// leaseSettled wakes the lease loop when the node first becomes live: it
// competes for the lease only from then on.
func (o *Orchestrator) leaseSettled(live bool) {
	if live && !o.lease.live.Swap(true) {
		o.lease.wake()
	}
}

// LeaseTTL is the lease TTL this orchestrator times itself by: the
// cluster setting in force when its lease loop last looked (0 before
// Start).
func (o *Orchestrator) LeaseTTL() time.Duration { return time.Duration(o.lease.ttl.Load()) }

// leaseKV is one orchestrator's hold on the lease key: a compare-and-set
// on the key's revision for every write, so two writers never both win.
type leaseKV struct {
	kv          jetstream.KeyValue
	node        string
	incarnation string
	epoch       uint64    // the epoch of the lease held; 0 when none
	rev         uint64    // revision of our last write
	renewed     time.Time // when the last write that extended the lease was sent
	// What a standby saw: the holder's revision, since when (by this
	// process's clock), and when it last looked.
	seenRev  uint64
	seenAt   time.Time
	lookedAt time.Time
	// failing is the error of the last failed attempt to compete, logged
	// once until an attempt succeeds or fails otherwise.
	failing string
}

func (l *leaseKV) value() []byte {
	b, _ := json.Marshal(leaseValue{Leader: l.node, Incarnation: l.incarnation, Epoch: l.epoch})
	return b
}

// acquire tries to take the lease with an epoch above both the newest
// epoch folded and the one the lease key records, and reports how it was
// free ("" when it was not): "free" (no key: never taken, released, or
// expired in the bucket), "own" (held by this node's earlier incarnation,
// or by this process after a renewal it could not confirm), "holder_gone"
// (membership reports the holder dead or left) or "expired" (its revision
// has not moved for a TTL by this process's clock). Every write is a
// compare-and-set; one that loses the race is not an error.
func (l *leaseKV) acquire(ctx context.Context, folded uint64, ttl time.Duration, gone func(leaseValue) bool) (string, error) {
	for range 2 { // once more if the key moved or vanished meanwhile
		e, err := l.kv.Get(ctx, LeaseKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if won, err := l.take(ctx, folded+1, 0); won || err != nil {
				return "free", err
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("orchestrator: lease read: %w", err)
		}
		cur, how := l.takeable(e, time.Now(), ttl, gone)
		if how == "" {
			return "", nil
		}
		won, err := l.take(ctx, max(folded, cur.Epoch)+1, e.Revision())
		if won || err != nil {
			return how, err
		}
	}
	return "", nil
}

// takeable reads the lease key and says why it may be taken ("" if not).
func (l *leaseKV) takeable(e jetstream.KeyValueEntry, now time.Time, ttl time.Duration, gone func(leaseValue) bool) (leaseValue, string) {
	// A revision seen long ago proves nothing about the time since: start
	// counting again after a pause in looking (or after leading).
	if e.Revision() != l.seenRev || now.Sub(l.lookedAt) > renewEvery(ttl) {
		l.seenRev, l.seenAt = e.Revision(), now
	}
	l.lookedAt = now
	var cur leaseValue
	known := json.Unmarshal(e.Value(), &cur) == nil
	switch {
	case known && cur.Leader == l.node:
		return cur, "own"
	case known && gone(cur):
		return cur, "holder_gone"
	case now.Sub(l.seenAt) >= ttl:
		return cur, "expired"
	}
	return cur, ""
}

// take writes our lease with epoch: created if rev is 0, else replacing
// revision rev. It reports whether the write won.
func (l *leaseKV) take(ctx context.Context, epoch, rev uint64) (bool, error) {
	l.epoch = epoch
	sent := time.Now()
	var err error
	if rev == 0 {
		rev, err = l.kv.Create(ctx, LeaseKey, l.value())
	} else {
		rev, err = l.kv.Update(ctx, LeaseKey, l.value(), rev)
	}
	if err != nil {
		l.epoch = 0
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongRevision(err) {
			return false, nil // another writer moved first
		}
		return false, fmt.Errorf("orchestrator: lease write (epoch %d): %w", epoch, err)
	}
	l.rev, l.renewed, l.seenRev = rev, sent, 0
	return true, nil
}

// errLeaseTaken is a renewal that found the key at our revision holding
// someone else's lease: the bucket was made again and its revisions
// started over, so a revision alone no longer proves the key is ours.
var errLeaseTaken = errors.New("orchestrator: the lease key holds another lease at our revision (bucket made again)")

// renew extends the lease: it reads the key, checks that it is still our
// write — our revision and our value; after the bucket was made again
// another holder's write can carry our old revision — and replaces it on
// that revision. A key that holds our value at a later revision is our
// own renewal that the bucket applied but whose answer did not come in
// time: our value (this process's incarnation at our epoch) is written by
// no one else, so the revision is adopted and the lease renewed on it.
func (l *leaseKV) renew(ctx context.Context) error {
	e, err := l.kv.Get(ctx, LeaseKey)
	if err != nil {
		return fmt.Errorf("orchestrator: lease read (epoch %d, revision %d): %w", l.epoch, l.rev, err)
	}
	if e.Revision() > l.rev && bytes.Equal(e.Value(), l.value()) {
		l.rev = e.Revision()
	}
	if !l.ours(e) {
		return fmt.Errorf("%w: revision %d holds %s", errLeaseTaken, e.Revision(), e.Value())
	}
	// The lease runs from the write: no one sees it before it is sent
	// (a standby counts from the revision it reads, the bucket's TTL from
	// the write stored), so the time it is sent, after the read, is when
	// the lease was extended at the earliest.
	sent := time.Now()
	rev, err := l.kv.Update(ctx, LeaseKey, l.value(), l.rev)
	if err != nil {
		return fmt.Errorf("orchestrator: lease renew (epoch %d, revision %d): %w", l.epoch, l.rev, err)
	}
	l.rev, l.renewed = rev, sent
	return nil
}

// release deletes the lease if we hold it, so that a standby takes over
// without waiting for the TTL; the delete is on our revision, and only if
// the key there holds our value (see renew), so a lease someone else has
// taken meanwhile stays.
func (l *leaseKV) release(ctx context.Context) {
	if l.epoch == 0 {
		return
	}
	if e, err := l.kv.Get(ctx, LeaseKey); err == nil && l.ours(e) {
		_ = l.kv.Delete(ctx, LeaseKey, jetstream.LastRevision(l.rev))
	}
	l.epoch = 0
}

// ours reports whether e is our last write: our revision and our value.
// The revision alone proves nothing once the bucket was made again (its
// revisions start over).
func (l *leaseKV) ours(e jetstream.KeyValueEntry) bool {
	return e.Revision() == l.rev && bytes.Equal(e.Value(), l.value())
}

// lostAtOnce reports a renewal that proves the lease is someone else's:
// the key moved or vanished.
func lostAtOnce(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, errLeaseTaken) || isWrongRevision(err)
}

func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// holderGone reports whether members show the lease holder's process dead
// or left. Only the holder's own incarnation counts: a view of an earlier
// process of the same node says nothing about this one.
func holderGone(members []gossip.Member, v leaseValue) bool {
	for _, m := range members {
		if m.Node != v.Leader {
			continue
		}
		if m.Incarnation != "" && v.Incarnation != "" && m.Incarnation != v.Incarnation {
			return false
		}
		return m.State == gossip.Dead || m.State == gossip.Left
	}
	return false
}

// leaseLoop holds or competes for the lease until ctx ends, then releases
// it (unless keep is set).
func (o *Orchestrator) leaseLoop(ctx context.Context) {
	l := &leaseKV{kv: o.cfg.KV, node: o.env.Node, incarnation: o.cfg.Incarnation}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			o.setEpoch(0)
			if !o.lease.keep.Load() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				l.release(rctx)
				cancel()
			}
			return
		case <-timer.C:
		case <-o.lease.kick:
		}
		timer.Reset(o.leaseTurn(ctx, l))
	}
}

// leaseTurn does what is due now and returns when to look again.
func (o *Orchestrator) leaseTurn(ctx context.Context, l *leaseKV) time.Duration {
	ttl := o.leaseTTLInForce()
	if l.epoch == 0 {
		if !o.lease.live.Load() {
			return pollEvery(ttl)
		}
		o.compete(ctx, l, ttl)
		if l.epoch == 0 {
			return pollEvery(ttl)
		}
	}
	if !o.checkElection(ctx, l, ttl) {
		return 0 // compete again at once
	}
	if due := l.renewed.Add(renewEvery(ttl)); time.Now().Before(due) {
		return time.Until(due)
	}
	if !o.renew(ctx, l, ttl) {
		return pollEvery(ttl)
	}
	// The next renewal is due renewEvery after this one was sent, not
	// after it was answered: a slow answer must not push it later.
	return max(time.Until(l.renewed.Add(renewEvery(ttl))), 0)
}

// leaseTTLInForce reads the TTL in force and logs when it changes.
func (o *Orchestrator) leaseTTLInForce() time.Duration {
	ttl := event.DefaultLeaseTTL
	if o.cfg.Settings != nil {
		if d := o.cfg.Settings.LeaseTTL(); d > 0 {
			ttl = d
		}
	}
	if old := time.Duration(o.lease.ttl.Swap(int64(ttl))); old != ttl {
		o.log.Info("lease TTL in force", "ttl", ttl, "renew_every", renewEvery(ttl), "poll_every", pollEvery(ttl))
	}
	return ttl
}

// compete tries to take the lease and, on winning, emits leader.elected.
func (o *Orchestrator) compete(ctx context.Context, l *leaseKV, ttl time.Duration) {
	folded, _ := o.foldedLeader()
	// A write that lands within a TTL of being sent wins a lease that
	// still has time left (see renewEvery): a busy node is not kept out.
	actx, cancel := context.WithTimeout(ctx, ttl)
	how, err := l.acquire(actx, folded, ttl, o.holderGone)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil && err.Error() != l.failing:
		l.failing = err.Error()
		o.log.Warn("cannot compete for the leader lease; retrying", "err", err)
	case err == nil && l.failing != "":
		l.failing = ""
		o.log.Info("leader lease reachable again")
	}
	if l.epoch == 0 {
		return
	}
	o.log.Info("leader lease won", "epoch", l.epoch, "how", how, "ledger_epoch", folded)
	d := event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: l.epoch}, Leader: o.env.Node})
	if err := o.env.Emit.Emit(ctx, d); err != nil {
		if ctx.Err() == nil {
			o.log.Error("emit leader.elected; giving the lease up", "epoch", l.epoch, "err", err)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), renewEvery(ttl))
		l.release(rctx)
		cancel()
	}
}

// checkElection compares the lease held with the ledger. The fold accepts
// an election only with an epoch above the one in force, so once ours is
// folded the ledger shows either us at our epoch (accepted: decisions may
// start) or another leader at our epoch or above (ours was not accepted, or
// a newer leader took over): then we give the lease up and return false.
// Until ours is folded the ledger shows an older epoch, and we wait.
func (o *Orchestrator) checkElection(ctx context.Context, l *leaseKV, ttl time.Duration) bool {
	epoch, leader := o.foldedLeader()
	switch {
	case epoch > l.epoch || (epoch == l.epoch && leader != o.env.Node):
		o.log.Warn("another leader holds an epoch at or above ours; giving the lease up", "epoch", l.epoch, "ledger_epoch", epoch, "ledger_leader", leader)
		o.setEpoch(0)
		rctx, cancel := context.WithTimeout(ctx, renewEvery(ttl))
		l.release(rctx)
		cancel()
		return false
	case epoch == l.epoch && o.Leader() != l.epoch:
		o.log.Info("leader elected", "epoch", l.epoch)
		o.setEpoch(l.epoch)
	}
	return true
}

// renew extends the lease and reports whether it still holds. A renewal
// that shows the key moved or vanished loses the lease at once; other
// failures are retried until a TTL has passed since the last write that
// extended it, when a standby may take it.
func (o *Orchestrator) renew(ctx context.Context, l *leaseKV, ttl time.Duration) bool {
	rctx, cancel := context.WithTimeout(ctx, renewDeadline(l.renewed, ttl))
	err := l.renew(rctx)
	cancel()
	switch {
	case err == nil:
		return true
	case ctx.Err() != nil:
		return true // stopping: the loop releases it
	case lostAtOnce(err) || time.Since(l.renewed) >= ttl:
		o.log.Warn("leadership lost", "epoch", l.epoch, "err", err)
		l.epoch = 0
		o.setEpoch(0)
	default:
		o.log.Warn("lease renew failed; retrying", "epoch", l.epoch, "err", err)
	}
	return false
}

// holderGone reports whether the membership view shows the lease holder
// dead or left (never, without a membership view). The view is read at
// each look at the lease, not through Changed, whose signal the leader's
// membership reconcile takes.
func (o *Orchestrator) holderGone(v leaseValue) bool {
	if o.cfg.Membership == nil {
		return false
	}
	return holderGone(o.cfg.Membership.Members(), v)
}

// foldedLeader is the newest leader epoch folded and its leader, as the
// owner of the core last published.
func (o *Orchestrator) foldedLeader() (uint64, string) {
	v := o.view.Load()
	return v.epoch, v.leader
}

// setEpoch records the epoch this node leads with (0: it does not) and
// wakes the owner of the core, which forgets its decisions in flight when
// the epoch changed.
func (o *Orchestrator) setEpoch(e uint64) {
	o.epoch.Store(e)
	o.poke()
}
