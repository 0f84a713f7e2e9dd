package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/membership"
	"github.com/agentic-dev/agentic/roles"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

// The lease tests run orchestrators against a real leader bucket on an
// embedded JetStream server. What they emit goes into seqLedger, which
// numbers the events and folds them into every orchestrator in order, as
// the node's ledger follower does (a member can be held back to play a
// node whose ledger lags).

// seqLedger is the committed event order the orchestrators fold.
type seqLedger struct {
	mu      sync.Mutex
	events  []event.Event
	members []*ledgerMember
}

type ledgerMember struct {
	o    *Orchestrator
	next int  // index of the next event to fold
	held bool // folds nothing until released
}

// add commits an event signed by node and delivers it.
func (l *seqLedger) add(d event.Draft, node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := uint64(len(l.events) + 1)
	l.events = append(l.events, event.Event{Seq: seq, StreamSeq: seq, ID: d.ID, Type: d.Type, Run: d.Run, Node: node,
		Time: d.Time, Subject: d.Subject(), Data: d.Data})
	l.deliverLocked()
}

func (l *seqLedger) deliverLocked() {
	for _, m := range l.members {
		for ; !m.held && m.next < len(l.events); m.next++ {
			m.o.Fold(l.events[m.next])
		}
	}
}

func (l *seqLedger) emitter(node string) roles.Emitter {
	return roles.EmitterFunc(func(_ context.Context, drafts ...event.Draft) error {
		for _, d := range drafts {
			l.add(d, node)
		}
		return nil
	})
}

func (l *seqLedger) join(o *Orchestrator, held bool) *ledgerMember {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &ledgerMember{o: o, held: held}
	l.members = append(l.members, m)
	l.deliverLocked()
	return m
}

func (l *seqLedger) hold(m *ledgerMember, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m.held = held
	l.deliverLocked()
}

// election is a leader.elected as committed.
type election struct {
	Epoch  uint64
	Leader string
}

func (l *seqLedger) elections() []election {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []election
	for _, ev := range l.events {
		var d event.LeaderElectedData
		if ev.Type == event.LeaderElected && ev.Decode(&d) == nil {
			out = append(out, election{d.Epoch, d.Leader})
		}
	}
	return out
}

// fixedTTL is a lease TTL setting that the test changes.
type fixedTTL struct{ d atomic.Int64 }

func ttlOf(d time.Duration) *fixedTTL {
	f := &fixedTTL{}
	f.d.Store(int64(d))
	return f
}

func (f *fixedTTL) LeaseTTL() time.Duration { return time.Duration(f.d.Load()) }

// view is a membership view the test sets.
type view struct {
	mu      sync.Mutex
	members []membership.Member
	changed chan struct{}
}

func (v *view) Members() []membership.Member {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.members)
}

func (v *view) Changed() <-chan struct{} { return v.changed }

func (v *view) set(ms ...membership.Member) {
	v.mu.Lock()
	v.members = ms
	v.mu.Unlock()
}

// leaseKit is a leader bucket on a real server and a ledger.
type leaseKit struct {
	srv *embedded.Server
	js  jetstream.JetStream
	kv  jetstream.KeyValue
	l   *seqLedger
}

func newLeaseKit(tb testing.TB) *leaseKit {
	tb.Helper()
	ignore := goleak.IgnoreCurrent()
	tb.Cleanup(func() {
		if t, ok := tb.(*testing.T); ok {
			goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("github.com/nats-io/nats.go.(*timeoutPool).run"))
		}
	})
	srv := bustest.Server(tb)
	conn := bustest.Connect(tb, srv)
	kv, err := conn.JS.KeyValue(context.Background(), bus.LeaderBucket)
	if err != nil {
		tb.Fatal(err)
	}
	return &leaseKit{srv: srv, js: conn.JS, kv: kv, l: &seqLedger{}}
}

// node is one orchestrator process of the test.
type node struct {
	name, inc string
	settings  LeaseSettings
	view      Membership
	held      bool // its ledger lags until released
}

// start starts an orchestrator that is live at once; it is stopped (and
// releases its lease) at cleanup unless the test crashed it.
func (k *leaseKit) start(tb testing.TB, n node) (*Orchestrator, *ledgerMember, *logrec.Recorder) {
	tb.Helper()
	rec := &logrec.Recorder{}
	if n.inc == "" {
		n.inc = n.name + "-1"
	}
	o := New(roles.Env{Node: n.name, Logger: slog.New(rec), Emit: k.l.emitter(n.name)},
		Config{KV: k.kv, Settings: n.settings, Incarnation: n.inc, Membership: n.view})
	m := k.l.join(o, n.held)
	o.Settled(true)
	if err := o.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stop(tb, o) })
	return o, m, rec
}

func stop(tb testing.TB, o *Orchestrator) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.Stop(ctx); err != nil {
		tb.Error(err)
	}
}

// crash stops o without releasing its lease, as kill -9 would.
func crash(tb testing.TB, o *Orchestrator) {
	o.lease.keep.Store(true)
	stop(tb, o)
}

// holder reads the lease key.
func (k *leaseKit) holder(tb testing.TB) (leaseValue, uint64) {
	tb.Helper()
	e, err := k.kv.Get(context.Background(), LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return leaseValue{}, 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	var v leaseValue
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		tb.Fatal(err)
	}
	return v, e.Revision()
}

func leads(o *Orchestrator, epoch uint64) func() bool {
	return func() bool { return o.Leader() == epoch }
}

const waitLong = 20 * time.Second

// TestOneOfCompetingLeasesWins: orchestrators started together elect one
// leader, with one election, and the others stay standbys while it renews.
func TestOneOfCompetingLeasesWins(t *testing.T) {
	k := newLeaseKit(t)
	ttl := ttlOf(3 * time.Second)
	var all []*Orchestrator
	for _, name := range []string{"a", "b", "c"} {
		o, _, _ := k.start(t, node{name: name, settings: ttl})
		all = append(all, o)
	}
	poll.Eventually(t, waitLong, "a leader", func() bool {
		return slices.ContainsFunc(all, func(o *Orchestrator) bool { return o.Leader() != 0 })
	})
	_, rev := k.holder(t)
	poll.Eventually(t, waitLong, "three renewals", func() bool { _, r := k.holder(t); return r >= rev+3 })
	var leaders []string
	for _, o := range all {
		if o.Leader() != 0 {
			leaders = append(leaders, o.env.Node)
		}
	}
	v, _ := k.holder(t)
	if got := k.l.elections(); len(leaders) != 1 || len(got) != 1 || got[0] != (election{1, leaders[0]}) || v.Leader != leaders[0] || v.Epoch != 1 {
		t.Fatalf("leaders %v, elections %v, lease %+v: want one leader at epoch 1", leaders, got, v)
	}
}

// TestStandbyTakesOverWhenLeaderStopsRenewing: a leader that stops
// renewing (killed) is replaced once its lease expires, with the next
// epoch.
func TestStandbyTakesOverWhenLeaderStopsRenewing(t *testing.T) {
	k := newLeaseKit(t)
	ttl := ttlOf(time.Second)
	a, _, _ := k.start(t, node{name: "a", settings: ttl})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	b, _, _ := k.start(t, node{name: "b", settings: ttl})
	crash(t, a)
	poll.Eventually(t, waitLong, "b leading at epoch 2", leads(b, 2))
	if got := k.l.elections(); !slices.Equal(got, []election{{1, "a"}, {2, "b"}}) {
		t.Fatalf("elections %v", got)
	}
}

// TestRecreatedBucketKeepsEpochsAboveTheLedger: epochs come from the
// ledger, not from the bucket's revisions: a leader elected at 42 in a
// bucket at revision 1 keeps leading, and when the bucket is deleted and
// made again under it, the next election is 43.
func TestRecreatedBucketKeepsEpochsAboveTheLedger(t *testing.T) {
	k := newLeaseKit(t)
	k.l.add(event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: 41}, Leader: "old"}), "old")
	a, _, _ := k.start(t, node{name: "a", settings: ttlOf(time.Second)})
	poll.Eventually(t, waitLong, "a leading at epoch 42", leads(a, 42))
	ctx := context.Background()
	if err := k.js.DeleteKeyValue(ctx, bus.LeaderBucket); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(ctx, k.js, bus.StreamConfig{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, waitLong, "a leading at epoch 43", leads(a, 43))
	if v, rev := k.holder(t); v.Epoch != 43 || rev > 10 {
		t.Fatalf("lease %+v at revision %d, want epoch 43 in the new bucket", v, rev)
	}
	if got := k.l.elections(); !slices.Equal(got, []election{{41, "old"}, {42, "a"}, {43, "a"}}) {
		t.Fatalf("elections %v", got)
	}
}

// TestRestartBeforeTTLTakesOverAtOnce: the same node restarting (a new
// incarnation) takes its old lease over without waiting for the TTL (a
// minute here), with a new epoch.
func TestRestartBeforeTTLTakesOverAtOnce(t *testing.T) {
	k := newLeaseKit(t)
	ttl := ttlOf(time.Minute)
	a1, _, _ := k.start(t, node{name: "a", inc: "a-1", settings: ttl})
	poll.Eventually(t, waitLong, "a-1 leading", leads(a1, 1))
	crash(t, a1)
	a2, _, _ := k.start(t, node{name: "a", inc: "a-2", settings: ttl})
	poll.Eventually(t, waitLong, "a-2 leading at epoch 2", leads(a2, 2))
	if v, _ := k.holder(t); v != (leaseValue{Leader: "a", Incarnation: "a-2", Epoch: 2}) {
		t.Fatalf("lease %+v", v)
	}
}

// TestStopReleasesTheLease: Stop deletes the lease, and a standby takes
// over without waiting for the TTL (a minute here).
func TestStopReleasesTheLease(t *testing.T) {
	k := newLeaseKit(t)
	ttl := ttlOf(time.Minute)
	a, _, _ := k.start(t, node{name: "a", settings: ttl})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	b, _, _ := k.start(t, node{name: "b", settings: ttl})
	stop(t, a)
	if a.Leader() != 0 {
		t.Fatalf("a still leads at %d after Stop", a.Leader())
	}
	poll.Eventually(t, waitLong, "b leading at epoch 2", leads(b, 2))
}

// TestStandbyTakesOverFromADeadHolder: when the membership view reports
// the holder's process dead, a standby takes the lease at once (the TTL is
// a minute). Which views count is TestHolderGone's.
func TestStandbyTakesOverFromADeadHolder(t *testing.T) {
	k := newLeaseKit(t)
	ttl := ttlOf(time.Minute)
	a, _, _ := k.start(t, node{name: "a", inc: "a-1", settings: ttl})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	v := &view{changed: make(chan struct{})}
	v.set(membership.Member{Meta: membership.Meta{Node: "a", Incarnation: "a-1"}, State: membership.Alive})
	b, _, _ := k.start(t, node{name: "b", settings: ttl, view: v})
	crash(t, a)
	v.set(membership.Member{Meta: membership.Meta{Node: "a", Incarnation: "a-1"}, State: membership.Dead})
	poll.Eventually(t, waitLong, "b leading at epoch 2", leads(b, 2))
	if got := k.l.elections(); !slices.Equal(got, []election{{1, "a"}, {2, "b"}}) {
		t.Fatalf("elections %v", got)
	}
}

func TestHolderGone(t *testing.T) {
	held := leaseValue{Leader: "a", Incarnation: "i2", Epoch: 7}
	m := func(node, inc string, st membership.State) membership.Member {
		return membership.Member{Meta: membership.Meta{Node: node, Incarnation: inc}, State: st}
	}
	tests := []struct {
		name    string
		members []membership.Member
		want    bool
	}{
		{"no view", nil, false},
		{"alive", []membership.Member{m("a", "i2", membership.Alive)}, false},
		{"suspect", []membership.Member{m("a", "i2", membership.Suspect)}, false},
		{"dead", []membership.Member{m("b", "x", membership.Alive), m("a", "i2", membership.Dead)}, true},
		{"left", []membership.Member{m("a", "i2", membership.Left)}, true},
		{"earlier incarnation dead", []membership.Member{m("a", "i1", membership.Dead)}, false},
		{"no incarnation announced", []membership.Member{m("a", "", membership.Dead)}, true},
		{"another node dead", []membership.Member{m("b", "i2", membership.Dead)}, false},
	}
	for _, tt := range tests {
		if got := holderGone(tt.members, held); got != tt.want {
			t.Errorf("%s: holderGone = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestOverwrittenLeaseIsLostAtOnce: a renewal that finds the key moved
// ends the leadership at once. The new holder never renews, so after a TTL
// the node takes the lease back, above the epoch the key recorded (the
// bucket keeps the key longer than the TTL, as it does when its TTL was
// not brought to the setting yet).
func TestOverwrittenLeaseIsLostAtOnce(t *testing.T) {
	k := newLeaseKit(t)
	ctx := context.Background()
	st, err := k.js.Stream(ctx, bus.LeaderBucketStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.js.UpdateStream(ctx, bus.WithLeaseTTL(st.CachedInfo().Config, time.Minute, 0)); err != nil {
		t.Fatal(err)
	}
	a, _, rec := k.start(t, node{name: "a", settings: ttlOf(3 * time.Second)})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	b, _ := json.Marshal(leaseValue{Leader: "intruder", Incarnation: "x", Epoch: 9})
	if _, err := k.kv.Put(ctx, LeaseKey, b); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, waitLong, "a no longer leading", leads(a, 0))
	poll.Eventually(t, waitLong, "a leading again at epoch 10", leads(a, 10))
	if len(rec.Find("leadership lost")) != 1 {
		t.Fatalf("leadership lost logged %d times", len(rec.Find("leadership lost")))
	}
}

// TestRenewFailingLosesLeadership: a leader that cannot renew (its NATS
// server is gone) stops leading once a TTL has passed since its last
// renewal.
func TestRenewFailingLosesLeadership(t *testing.T) {
	k := newLeaseKit(t)
	a, _, rec := k.start(t, node{name: "a", settings: ttlOf(time.Second)})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	k.srv.Shutdown()
	poll.Eventually(t, waitLong, "a no longer leading", leads(a, 0))
	if len(rec.Find("leadership lost")) != 1 {
		t.Fatalf("leadership lost logged %d times", len(rec.Find("leadership lost")))
	}
}

// TestSecondWinnerGivesUpAndCompetesAgain: a standby whose ledger lags
// wins a released lease with the epoch its ledger shows, the same as the
// previous leader's; its election is not accepted, it sees so once its
// ledger catches up, gives the lease up and wins the next epoch. It never
// leads at the epoch it shared.
func TestSecondWinnerGivesUpAndCompetesAgain(t *testing.T) {
	k := newLeaseKit(t)
	ttl := ttlOf(time.Minute)
	a, _, _ := k.start(t, node{name: "a", settings: ttl})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	b, bm, brec := k.start(t, node{name: "b", settings: ttl, held: true})
	stop(t, a) // releases: the lease key no longer says which epoch a had
	poll.Eventually(t, waitLong, "b's election", func() bool { return len(k.l.elections()) == 2 })
	if got := k.l.elections(); got[1] != (election{1, "b"}) || b.Leader() != 0 {
		t.Fatalf("elections %v, b leads at %d: want b elected at 1, not leading", got, b.Leader())
	}
	k.l.hold(bm, false)
	poll.Eventually(t, waitLong, "b leading at epoch 2", leads(b, 2))
	if got := k.l.elections(); !slices.Equal(got, []election{{1, "a"}, {1, "b"}, {2, "b"}}) {
		t.Fatalf("elections %v", got)
	}
	if len(brec.Find("another leader holds an epoch at or above ours; giving the lease up")) != 1 {
		t.Fatal("b did not say it gave the lease up")
	}
}

// TestLeaseTTLChangeIsFollowed: the renew period follows the TTL in force
// once a cluster.settings event is folded: from a minute (a renewal every
// 20 s) to a second, six renewals come well within the wait, where the
// old period would need two minutes.
func TestLeaseTTLChangeIsFollowed(t *testing.T) {
	k := newLeaseKit(t)
	ttl := ttlOf(time.Minute)
	a, _, rec := k.start(t, node{name: "a", settings: ttl})
	poll.Eventually(t, waitLong, "a leading", leads(a, 1))
	if a.LeaseTTL() != time.Minute {
		t.Fatalf("TTL in force %s", a.LeaseTTL())
	}
	ttl.d.Store(int64(time.Second))
	k.l.add(event.MustDraft(event.ClusterSettings, "", event.ClusterSettingsData{Revision: 1, Lease: event.LeaseSettingsData{TTL: event.Duration(time.Second)}}), "operator")
	poll.Eventually(t, waitLong, "a timing itself by 1s", func() bool { return a.LeaseTTL() == time.Second })
	_, rev := k.holder(t)
	poll.Eventually(t, waitLong, "six renewals", func() bool { _, r := k.holder(t); return r >= rev+6 })
	if len(rec.Find("lease TTL in force")) != 2 {
		t.Fatalf("TTL changes logged %d times, want 2", len(rec.Find("lease TTL in force")))
	}
}

// BenchmarkLeaderFailover measures leader failover with the default lease
// TTL: from the leader's end to the standby having folded its own accepted
// leader.elected (the moment it may decide). "killed": the leader stops
// renewing and leaves its lease (kill -9, no gossip); "dead": the same,
// with the membership view reporting the holder dead at once (the part
// after gossip detection); "stopped": Stop, which releases the lease. Each
// failover takes up to a TTL and a poll: run with -benchtime=Nx.
func BenchmarkLeaderFailover(b *testing.B) {
	for _, mode := range []string{"killed", "dead", "stopped"} {
		b.Run(mode, func(b *testing.B) {
			k := newLeaseKit(b)
			ttl := ttlOf(event.DefaultLeaseTTL)
			v := &view{changed: make(chan struct{})}
			var seq int
			next := func() *Orchestrator {
				seq++
				name := fmt.Sprintf("n%d", seq)
				o, _, _ := k.start(b, node{name: name, inc: name, settings: ttl, view: v})
				return o
			}
			leader := next()
			if err := poll.Wait(waitLong, func() bool { return leader.Leader() != 0 }); err != nil {
				b.Fatal(err)
			}
			var took []time.Duration
			b.ResetTimer()
			for range b.N {
				standby := next()
				// The standby has looked at the lease once; the leader goes at
				// a random point of its renew period and of the standby's
				// polling, as a kill does.
				if err := poll.Wait(waitLong, func() bool { return standby.LeaseTTL() != 0 }); err != nil {
					b.Fatal(err)
				}
				<-time.After(rand.N(renewEvery(ttl.LeaseTTL())))
				start := time.Now()
				switch mode {
				case "killed":
					crash(b, leader)
				case "dead":
					crash(b, leader)
					v.set(membership.Member{Meta: membership.Meta{Node: leader.env.Node, Incarnation: leader.cfg.Incarnation}, State: membership.Dead})
				case "stopped":
					stop(b, leader)
				}
				if err := poll.Wait(waitLong, func() bool { return standby.Leader() != 0 }); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				leader = standby
			}
			b.StopTimer()
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
		})
	}
}
