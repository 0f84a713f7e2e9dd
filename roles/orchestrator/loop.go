package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	gossip "github.com/agentic-dev/agentic/internal/member"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/policy"
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures the orchestrator role.
type Config struct {
	// KV is the leader bucket (bus.LeaderBucket).
	KV jetstream.KeyValue
	// Settings gives the lease TTL in force, the cluster setting (see
	// lease.go); nil: event.DefaultLeaseTTL.
	Settings LeaseSettings
	// Incarnation distinguishes this process from the node's earlier ones.
	Incarnation string
	// Membership is the gossip layer's view of the cluster; nil when the
	// node runs no gossip (a single node), and then no membership events
	// are recorded.
	Membership Membership
	// MembershipGrace is how long after the decision loop starts a node the
	// ledger holds alive but the membership does not know at all is left
	// alone before it is recorded failed; 0 means DefaultMembershipGrace.
	MembershipGrace time.Duration
	// Paused, if set, returns why the leader must assign no new step (the
	// data dir below its free-space floor), or nil: while it does, the
	// other decisions go on and assignments wait.
	Paused func() error
	// Facts resolves steps' memory references (memoryref.go): the memory
	// fold of the node; nil fails every step that has one.
	Facts Facts
}

// pausedRecheck is how often a paused leader looks again whether it may
// assign.
const pausedRecheck = time.Second

// membershipTick is how often a leader with a membership compares it with
// the ledger even when the membership signals no change (level-triggered:
// a decision that could not be emitted is made again).
const membershipTick = time.Second

// Membership is what the orchestrator learns membership from: the current
// view (every member this node knows, itself included, dead and left ones
// for a while) and a signal, level-triggered, that it changed.
type Membership interface {
	Members() []gossip.Member
	Changed() <-chan struct{}
}

// Orchestrator is the role: the pure State and Decide, driven by a loop that
// folds committed events, holds the leader lease, and emits decisions.
type Orchestrator struct {
	env  roles.Env
	cfg  Config
	log  *slog.Logger
	kick chan struct{}
	// lease is what the lease loop (lease.go) shares with the rest.
	lease leaseState

	mu struct {
		sync.Mutex
		state    *State
		inflight map[DecisionKey]bool
		byID     map[string]DecisionKey // decision event id → key
		live     bool
		epoch    uint64 // ours, while we hold the lease
	}

	// bootstrap is the policy this node records as the first one while
	// the ledger holds none (UsePolicyFile; nil: the shipped default),
	// bootstrapHash its hash, bootstrapErr why the file could not be
	// used (Start returns it), warned whether the log said that the
	// ledger holds another.
	bootstrap     []byte
	bootstrapHash string
	bootstrapErr  error
	warned        bool

	runMu  sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ roles.Role   = (*Orchestrator)(nil)
	_ roles.Folder = (*Orchestrator)(nil)
)

// New returns the role; it starts nothing.
func New(env roles.Env, cfg Config) *Orchestrator {
	if cfg.MembershipGrace <= 0 {
		cfg.MembershipGrace = DefaultMembershipGrace
	}
	o := &Orchestrator{env: env, cfg: cfg, log: env.Logger, kick: make(chan struct{}, 1), lease: newLeaseState()}
	if o.log == nil {
		o.log = slog.Default()
	}
	o.mu.state = NewState()
	o.mu.inflight = map[DecisionKey]bool{}
	o.mu.byID = map[string]DecisionKey{}
	return o
}

// UsePolicyFile makes the policy file at path (agentd's --policy; "" for
// the shipped default) the one this node records while the ledger holds
// no policy. Call it before Start, which fails if the file cannot be read
// or is not a valid policy. Once the ledger holds a policy, a file that
// differs from it only gets a warning in the log: the policy in force is
// changed with agentctl policy apply.
func (o *Orchestrator) UsePolicyFile(path string) {
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		o.bootstrapErr = fmt.Errorf("orchestrator: policy file: %w", err)
		return
	}
	p, err := policy.Parse(b, path)
	if err != nil {
		o.bootstrapErr = fmt.Errorf("orchestrator: policy file: %w", err)
		return
	}
	o.bootstrap, o.bootstrapHash = b, p.Hash()
}

// Name is "orchestrator".
func (o *Orchestrator) Name() string { return event.RoleOrchestrator }

// Fold applies a committed event.
func (o *Orchestrator) Fold(ev event.Event) {
	o.mu.Lock()
	o.mu.state.Apply(ev)
	if key, ok := o.mu.byID[ev.ID]; ok {
		delete(o.mu.byID, ev.ID)
		delete(o.mu.inflight, key)
	}
	o.mu.Unlock()
	o.leaseFolded(ev)
}

// Settled wakes the decision loop once the node is live.
func (o *Orchestrator) Settled(live bool) {
	o.mu.Lock()
	o.mu.live = live
	o.mu.Unlock()
	o.leaseSettled(live)
	if live {
		o.poke()
	}
}

func (o *Orchestrator) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Read calls f with the state under the role's lock. f must not keep s.
func (o *Orchestrator) Read(f func(s *State)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o.mu.state)
}

// Load returns, per node, how many steps of live runs it holds (assigned
// or running), as the folded state says; nodes that hold none are left
// out. For node listings (agentctl node ls).
func (o *Orchestrator) Load() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mu.state.Load()
}

// Leader reports this node's epoch if it leads, else 0.
func (o *Orchestrator) Leader() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mu.epoch
}

// Start begins the lease and decision loops.
func (o *Orchestrator) Start(ctx context.Context) error {
	if o.bootstrapErr != nil {
		return o.bootstrapErr
	}
	o.runMu.Lock()
	defer o.runMu.Unlock()
	if o.cancel != nil {
		return nil
	}
	ctx, o.cancel = context.WithCancel(context.WithoutCancel(ctx))
	o.wg.Add(2)
	go func() { defer o.wg.Done(); o.leaseLoop(ctx) }()
	go func() { defer o.wg.Done(); o.decideLoop(ctx) }()
	return nil
}

// Stop ends the loops and releases the lease so a standby takes over at once.
func (o *Orchestrator) Stop(ctx context.Context) error {
	o.runMu.Lock()
	cancel := o.cancel
	o.cancel = nil
	o.runMu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	o.wg.Wait()
	return nil
}

func (o *Orchestrator) decideLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var changed <-chan struct{}
	var tick <-chan time.Time
	var absentAfter time.Time
	if o.cfg.Membership != nil {
		changed = o.cfg.Membership.Changed()
		t := time.NewTicker(membershipTick)
		defer t.Stop()
		tick = t.C
		absentAfter = time.Now().UTC().Add(o.cfg.MembershipGrace)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.kick:
		case <-timer.C:
		case <-changed:
		case <-tick:
		}
		drafts, wake := o.decide(absentAfter)
		if len(drafts) > 0 {
			if err := o.env.Emit.Emit(ctx, drafts...); err != nil {
				if ctx.Err() != nil {
					return
				}
				o.log.Error("emit decisions", "err", err, "count", len(drafts))
				if len(drafts) > 1 && refused(err) {
					o.emitEach(ctx, drafts)
				} else {
					o.forget(drafts)
				}
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !wake.IsZero() {
			timer.Reset(max(time.Until(wake), time.Millisecond))
		} else {
			timer.Reset(time.Hour)
		}
	}
}

// decide runs ReconcileMembers (with a membership) and Decide if this node
// leads, is live, and has folded its own leader.elected (so it has seen
// every decision of the leaders before it). Membership decisions come
// first: what Decide gives up because of them, it gives up once they are
// folded.
func (o *Orchestrator) decide(absentAfter time.Time) ([]event.Draft, time.Time) {
	var view *MemberView
	if o.cfg.Membership != nil {
		view = &MemberView{Members: o.cfg.Membership.Members(), AbsentAfter: absentAfter}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.mu.live || o.mu.epoch == 0 || o.mu.state.Epoch != o.mu.epoch {
		return nil, time.Time{}
	}
	now := time.Now().UTC()
	var ds []Decision
	var wake time.Time
	if view != nil {
		ds, wake = ReconcileMembers(o.mu.state, *view, now, o.mu.epoch, o.mu.inflight)
	}
	if p := o.mu.state.Policy; p != nil && o.bootstrapHash != "" && p.Hash != o.bootstrapHash && !o.warned {
		o.warned = true
		o.log.Warn("the policy file differs from the policy in force in the ledger, which stays in force",
			"ledger_version", p.Version, "ledger_hash", p.Hash, "file_hash", o.bootstrapHash,
			"hint", "change the policy in force with agentctl policy apply -f FILE")
	}
	more, w := DecideWith(o.mu.state, now, o.mu.epoch, o.mu.inflight, Options{Policy: o.bootstrap, Facts: o.cfg.Facts})
	ds = append(ds, more...)
	if wake.IsZero() || (!w.IsZero() && w.Before(wake)) {
		wake = w
	}
	if o.cfg.Paused != nil && o.cfg.Paused() != nil {
		ds = slices.DeleteFunc(ds, func(d Decision) bool { return d.Draft.Type == event.TaskAssigned })
		if again := now.Add(pausedRecheck); wake.IsZero() || again.Before(wake) {
			wake = again
		}
	}
	drafts := make([]event.Draft, len(ds))
	for i, d := range ds {
		o.mu.inflight[d.Key] = true
		o.mu.byID[d.Draft.ID] = d.Key
		drafts[i] = d.Draft
	}
	return drafts, wake
}

// forget drops in-flight marks of drafts that could not be emitted.
// refused reports whether the emitter refused a draft for what it
// carries (too large for an event, or a secret left after redaction):
// emitting it again will not help.
func refused(err error) bool {
	return errors.Is(err, envelope.ErrTooLarge) || errors.Is(err, envelope.ErrSecret)
}

// emitEach emits drafts one at a time, after the emitter refused them
// together: a decision it refuses must not hold back the others (of
// every run) at every Decide. The refused one is logged and forgotten.
func (o *Orchestrator) emitEach(ctx context.Context, drafts []event.Draft) {
	for i, d := range drafts {
		if err := o.env.Emit.Emit(ctx, d); err != nil {
			if ctx.Err() != nil {
				o.forget(drafts[i:])
				return
			}
			o.log.Error("emit decision", "err", err, "type", d.Type, "run", d.Run, "id", d.ID)
			o.forget(drafts[i : i+1])
		}
	}
}

func (o *Orchestrator) forget(drafts []event.Draft) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range drafts {
		if key, ok := o.mu.byID[d.ID]; ok {
			delete(o.mu.byID, d.ID)
			delete(o.mu.inflight, key)
		}
	}
}

var _ roles.Snapshotter = (*Orchestrator)(nil)

// SnapshotName is "orchestrator".
func (o *Orchestrator) SnapshotName() string { return "orchestrator" }

// Snapshot returns the state as of the last folded event.
func (o *Orchestrator) Snapshot() (uint64, []byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, err := o.mu.state.MarshalSnapshot()
	return o.mu.state.Seq, b, err
}

// Restore replaces the state with a snapshot.
func (o *Orchestrator) Restore(data []byte) error {
	s, err := UnmarshalSnapshot(data)
	if err != nil {
		return err
	}
	o.mu.Lock()
	o.mu.state = s
	o.mu.Unlock()
	return nil
}
