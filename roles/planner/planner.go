package planner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
)

// ErrNoEmitter is returned by Start when the Env has no Emitter.
var ErrNoEmitter = errors.New("planner: env has no emitter")

// Planner is the planner role: it folds the ledger to learn which runs need
// a plan and plans them on its own goroutines once the node is live.
type Planner struct {
	env  roles.Env
	cfg  Config
	log  *slog.Logger
	file Source
	kick chan struct{}
	now  func() time.Time
	// folded is the ledger position of the last event folded. Only the
	// goroutine that calls Fold, Snapshot and Restore touches it.
	folded uint64

	mu struct {
		sync.Mutex
		runs    runs
		live    bool
		running int // jobs in flight
	}

	life struct {
		sync.Mutex
		cancel context.CancelFunc
	}
	wg sync.WaitGroup
}

var (
	_ roles.Role        = (*Planner)(nil)
	_ roles.Folder      = (*Planner)(nil)
	_ roles.Snapshotter = (*Planner)(nil)
)

// New returns the role; it starts nothing. Zero fields of cfg take their
// DefaultConfig values.
func New(env roles.Env, cfg Config) *Planner {
	p := &Planner{
		env:  env,
		cfg:  cfg.withDefaults(),
		log:  env.Logger,
		file: FileSource{},
		kick: make(chan struct{}, 1),
		now:  time.Now,
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.mu.runs = newRuns()
	return p
}

// Name is "planner".
func (p *Planner) Name() string { return event.RolePlanner }

// Start begins the planning loop and returns. ctx is used for its values
// only: the loop runs until Stop. Starting a started planner does nothing;
// a stopped planner can be started again.
func (p *Planner) Start(ctx context.Context) error {
	if p.env.Emit == nil {
		return ErrNoEmitter
	}
	p.life.Lock()
	defer p.life.Unlock()
	if p.life.cancel != nil {
		return nil
	}
	ctx, p.life.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.loop(ctx)
	}()
	return nil
}

// Stop ends the loop and every planning job, and waits for them until ctx
// ends. A job cut short emits nothing; its run is planned again after the
// next start (from the ledger, on any planner node). If ctx ends first,
// Stop returns its error; the jobs, already cancelled, still end on their
// own. Stopping a stopped planner does nothing.
func (p *Planner) Stop(ctx context.Context) error {
	p.life.Lock()
	cancel := p.life.cancel
	p.life.cancel = nil
	p.life.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("planner: stop: jobs still running: %w", ctx.Err())
	}
}

// poke wakes the loop without blocking.
func (p *Planner) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}
