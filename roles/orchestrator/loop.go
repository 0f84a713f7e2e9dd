package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	gossip "github.com/agentic-dev/agentic/internal/member"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
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
	// alone before it is recorded failed; 0 means core.DefaultMembershipGrace.
	MembershipGrace time.Duration
	// Paused, if set, returns why the leader must assign no new step (the
	// data dir below its free-space floor), or nil: while it does, the
	// other decisions go on and assignments wait.
	Paused func() error
	// Facts resolves steps' memory references (core/memoryref.go): the memory
	// fold of the node; nil fails every step that has one.
	Facts core.Facts
	// Artifacts resolves steps' inputs (core/inputs.go): the artifact
	// fold of the node; nil fails every step that has one.
	Artifacts core.Artifacts
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

// Orchestrator is the role: the pure core (package core) owned by one
// goroutine that folds committed events and decides, the lease loop, and
// an emitter (see the package doc).
type Orchestrator struct {
	env roles.Env
	cfg Config
	log *slog.Logger
	// kick wakes the owner to decide: the node live before Start, an
	// epoch won or lost.
	kick chan struct{}
	// lease is what the lease loop (lease.go) shares with the rest.
	lease leaseState
	// epoch is ours while we hold the lease (0: we do not lead); the lease
	// loop writes it, the owner reads it at each turn.
	epoch atomic.Uint64
	// in carries inputs to the owner, in order.
	in chan input
	// view is what the owner published after its last batch of inputs.
	view atomic.Pointer[readView]

	// hand says who owns the core: the owner goroutine while running,
	// else the caller holding hand (before Start, after Stop). A sender
	// holds it while it hands an input over, so that Stop never leaves
	// one behind; the owner never takes it.
	hand struct {
		sync.Mutex
		running bool
		c       *owner
	}

	// bootstrap is the policy this node records as the first one while
	// the ledger holds none (UsePolicyFile; nil: the shipped default),
	// bootstrapHash its hash, bootstrapErr why the file could not be
	// used (Start returns it).
	bootstrap     []byte
	bootstrapHash string
	bootstrapErr  error

	runMu sync.Mutex
	// cancel ends the lease loop and the emitter (wg), stopOwner the
	// owner (ownerWG).
	cancel    context.CancelFunc
	stopOwner context.CancelFunc
	wg        sync.WaitGroup
	ownerWG   sync.WaitGroup
}

var (
	_ roles.Role   = (*Orchestrator)(nil)
	_ roles.Folder = (*Orchestrator)(nil)
)

// inputBuffer is how many inputs may wait for the owner before a sender
// (the node's follower) waits too.
const inputBuffer = 1024

// New returns the role; it starts nothing.
func New(env roles.Env, cfg Config) *Orchestrator {
	if cfg.MembershipGrace <= 0 {
		cfg.MembershipGrace = core.DefaultMembershipGrace
	}
	o := &Orchestrator{env: env, cfg: cfg, log: env.Logger, kick: make(chan struct{}, 1), lease: newLeaseState(),
		in: make(chan input, inputBuffer)}
	if o.log == nil {
		o.log = slog.Default()
	}
	o.hand.c = newOwner(o)
	o.hand.c.publish()
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

// Fold hands a committed event to the owner of the core.
func (o *Orchestrator) Fold(ev event.Event) { o.send(input{ev: &ev}) }

// Settled hands the owner the node's liveness; once live, it decides.
func (o *Orchestrator) Settled(live bool) { o.send(input{settled: true, live: live}) }

func (o *Orchestrator) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Read calls f with the state on the goroutine that owns it, after every
// event folded so far, and waits for it. f must not keep s, nor call the
// Orchestrator.
func (o *Orchestrator) Read(f func(s *core.State)) {
	o.send(input{ask: func(c *owner) { f(c.state) }})
}

// Load returns, per node, how many steps of live runs it holds (assigned
// or running), as the owner last published; nodes that hold none are left
// out. For node listings (agentctl node ls).
func (o *Orchestrator) Load() map[string]int { return maps.Clone(o.view.Load().load) }

// Leader reports this node's epoch if it leads, else 0.
func (o *Orchestrator) Leader() uint64 { return o.epoch.Load() }

// Start begins the owner of the core, the emitter and the lease loop.
func (o *Orchestrator) Start(ctx context.Context) error {
	if o.bootstrapErr != nil {
		return o.bootstrapErr
	}
	o.runMu.Lock()
	defer o.runMu.Unlock()
	if o.cancel != nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	octx, ocancel := context.WithCancel(ctx)
	lctx, lcancel := context.WithCancel(ctx)
	o.cancel = lcancel
	o.stopOwner = ocancel
	jobs, results := make(chan []event.Draft, 1), make(chan []event.Draft, 1)
	o.hand.Lock()
	defer o.hand.Unlock()
	o.hand.running = true
	c := o.hand.c
	o.ownerWG.Add(1)
	go func() { defer o.ownerWG.Done(); c.run(octx, jobs, results) }()
	o.wg.Add(2)
	go func() { defer o.wg.Done(); o.leaseLoop(lctx) }()
	go func() { defer o.wg.Done(); o.emitLoop(lctx, jobs, results) }()
	return nil
}

// Stop ends the loops and releases the lease so a standby takes over at
// once. The lease loop and the emitter end first (what they emit may be
// folded back at once); then the owner folds what was handed to it and
// ends, and whoever folds next owns the core.
func (o *Orchestrator) Stop(ctx context.Context) error {
	o.runMu.Lock()
	defer o.runMu.Unlock()
	cancel, stopOwner := o.cancel, o.stopOwner
	o.cancel, o.stopOwner = nil, nil
	if cancel == nil {
		return nil
	}
	cancel()
	o.wg.Wait()
	o.hand.Lock()
	defer o.hand.Unlock()
	stopOwner()
	o.ownerWG.Wait()
	o.hand.running = false
	return nil
}

// send hands in to the owner of the core and, for a question, waits for
// its answer; with no owner running, the caller folds or answers it.
func (o *Orchestrator) send(in input) {
	o.hand.Lock()
	defer o.hand.Unlock()
	if !o.hand.running {
		c := o.hand.c
		c.handle(in)
		c.publish()
		c.afterPublish()
		if c.due {
			c.due = false
			o.poke() // the owner decides once it runs
		}
		return
	}
	if in.ask != nil {
		in.done = make(chan struct{})
	}
	o.in <- in
	if in.done != nil {
		<-in.done
	}
}

var _ roles.Snapshotter = (*Orchestrator)(nil)

// SnapshotName is "orchestrator".
func (o *Orchestrator) SnapshotName() string { return "orchestrator" }

// Snapshot returns the state as of the last folded event.
func (o *Orchestrator) Snapshot() (seq uint64, b []byte, err error) {
	o.send(input{ask: func(c *owner) {
		seq = c.state.Seq
		b, err = c.state.MarshalSnapshot()
	}})
	return seq, b, err
}

// Restore replaces the state with a snapshot; on error the state is left
// as it was.
func (o *Orchestrator) Restore(data []byte) error {
	s, err := core.UnmarshalSnapshot(data)
	if err != nil {
		return err
	}
	o.send(input{restore: s})
	return nil
}
