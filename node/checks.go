package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/outbox"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/ledger/follow"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// outboxStall is how long the outbox may hold events without publishing
// any, while connected, before its check fails.
const outboxStall = 10 * time.Second

// connected reports nc's status as an error unless it is CONNECTED,
// with the connection's last error when it has one.
func connected(nc *nats.Conn) error {
	st := nc.Status()
	if st == nats.CONNECTED {
		return nil
	}
	if err := nc.LastError(); err != nil {
		return fmt.Errorf("nats connection %s: %w", st, err)
	}
	return fmt.Errorf("nats connection %s", st)
}

// jetStreamCheck: the node's NATS connection is up and JetStream answers
// (an account info request, under the probe's timeout).
func jetStreamCheck(nc *nats.Conn, js jetstream.JetStream) health.Check {
	return health.Check{
		Name:     health.CheckJetStream,
		Blocking: true,
		Probe: func(ctx context.Context) error {
			if err := connected(nc); err != nil {
				return err
			}
			if _, err := js.AccountInfo(ctx); err != nil {
				return fmt.Errorf("jetstream does not answer: %w", err)
			}
			return nil
		},
	}
}

// outboxCheck: the outbox has not failed, and does not hold events it
// has not been able to publish for outboxStall while connected.
func outboxCheck(ob *outbox.Outbox, nc *nats.Conn) health.Check {
	d := &drainWatch{ob: ob, nc: nc, stall: outboxStall}
	return health.Check{Name: health.CheckOutbox, Blocking: true, Probe: d.probe}
}

// drainWatch remembers since when the outbox has published nothing while
// holding events.
type drainWatch struct {
	ob    *outbox.Outbox
	nc    *nats.Conn
	stall time.Duration

	mu    sync.Mutex
	pub   uint64
	since time.Time
}

func (d *drainWatch) probe(context.Context) error {
	if err := d.ob.Err(); err != nil {
		return err
	}
	pending, pub, now := d.ob.Pending(), d.ob.Published(), time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if pending == 0 || pub != d.pub || d.since.IsZero() || connected(d.nc) != nil {
		d.pub, d.since = pub, now
		return nil
	}
	if stuck := now.Sub(d.since); stuck >= d.stall {
		return fmt.Errorf("nothing published for %s (%d events pending)", stuck.Truncate(time.Second), pending)
	}
	return nil
}

// ledgerCheck: the ledger has caught up with the stream (the follower is
// live). caughtUp is closed once it has.
func ledgerCheck(f *follow.Follower, caughtUp <-chan struct{}) health.Check {
	return health.Check{
		Name:     health.CheckLedger,
		Blocking: true,
		Probe: func(context.Context) error {
			if !f.Live() {
				return errors.New("catching up with the stream")
			}
			return nil
		},
		Changed: func() <-chan struct{} { return caughtUp },
	}
}

// clockCheck: this node's clock, as the ledger measures it from the
// node's own messages (their iat against the stream's timestamps), is
// within the protocol's leeway; beyond it the node's events are refused.
// skews is the follower's Skews.
func clockCheck(name string, skews func() map[string]time.Duration) health.Check {
	return health.Check{
		Name:     health.CheckClock,
		Blocking: true,
		Alarm:    event.AlarmClockSkew,
		Probe: func(context.Context) error {
			skew, ok := skews()[name]
			if !ok || skew.Abs() <= envelope.Leeway {
				return nil
			}
			dir := "ahead of"
			if skew < 0 {
				dir = "behind"
			}
			return fmt.Errorf("clock %s %s the stream's (leeway %s): this node's events are refused; fix its time sync", skew.Abs().Round(100*time.Millisecond), dir, envelope.Leeway)
		},
	}
}

// leaderWatch reads the leader lease and judges it live or stale by
// whether its revision moved within the lease TTL, by this process's
// clock (as the standbys do), so that clock skew between nodes does not
// matter. It keeps what it saw for node.info.
type leaderWatch struct {
	kv  jetstream.KeyValue
	nc  *nats.Conn
	ttl func() time.Duration

	mu      sync.Mutex
	seenRev uint64
	seenAt  time.Time
	view    atomic.Pointer[leaderView]
}

// leaderView is the leader as the last probe saw it: a live lease's
// holder and epoch, or why none is known.
type leaderView struct {
	leader string
	epoch  uint64
	reason string
}

// leaderCheck: a leader holds a live lease. blocking on orchestrator
// nodes (no leader: no progress).
func leaderCheck(w *leaderWatch, blocking bool) health.Check {
	return health.Check{Name: health.CheckLeader, Blocking: blocking, Probe: w.probe}
}

func (w *leaderWatch) probe(ctx context.Context) error {
	v := w.read(ctx)
	w.view.Store(&v)
	if v.reason != "" {
		return errors.New(v.reason)
	}
	return nil
}

func (w *leaderWatch) read(ctx context.Context) leaderView {
	if err := connected(w.nc); err != nil {
		return leaderView{reason: "unknown: " + err.Error()}
	}
	e, err := w.kv.Get(ctx, orchestrator.LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return leaderView{reason: "no orchestrator holds the lease (none elected yet, or the lease expired or was deleted)"}
	}
	if err != nil {
		return leaderView{reason: "unknown: read the lease: " + err.Error()}
	}
	lease, err := orchestrator.DecodeLease(e.Value())
	if err != nil {
		return leaderView{reason: "the lease key holds no lease: " + err.Error()}
	}
	ttl, now := w.ttl(), time.Now()
	w.mu.Lock()
	if e.Revision() != w.seenRev {
		w.seenRev, w.seenAt = e.Revision(), now
	}
	still := now.Sub(w.seenAt)
	w.mu.Unlock()
	// A lease written long before (by the server's clock, allowing for
	// skew) is stale at once; otherwise it is stale once its revision has
	// not moved for a TTL.
	if age := now.Sub(e.Created()); age > ttl+envelope.Leeway {
		still = max(still, age)
	}
	if still > ttl {
		return leaderView{reason: fmt.Sprintf("%s (epoch %d) has not renewed its lease for %s (lease TTL %s)", lease.Leader, lease.Epoch, still.Round(100*time.Millisecond), ttl)}
	}
	return leaderView{leader: lease.Leader, epoch: lease.Epoch}
}

// last returns what the last probe saw; ok is false before the first.
func (w *leaderWatch) last() (leaderView, bool) {
	v := w.view.Load()
	if v == nil {
		return leaderView{}, false
	}
	return *v, true
}
