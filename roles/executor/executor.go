package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures the executor role.
type Config struct {
	// JS is the JetStream context (assignments in, output out).
	JS jetstream.JetStream
	// Verifier checks every message before it is acted on.
	Verifier *envelope.Verifier
	// StateDir holds the executor's local state (a Pebble store).
	StateDir string
	// Slots is how many attempts may run at once.
	Slots int
	// Runner holds the runner's defaults (timeout, working directory).
	Runner runner.Options
	// Incarnation identifies this process among the node's lives.
	Incarnation string
	// OnFatal is called, at most once and from one of the executor's
	// goroutines, when the executor's local state fails to sync (an error
	// wrapping localstate.ErrSync): the executor has stopped taking work and
	// the node must stop (DESIGN.md: a failed fsync stops the node). It
	// must not block. Nil only logs.
	OnFatal func(error)

	// ackWait is the consumer's AckWait (default 30s); tests shorten it to
	// see redeliveries.
	ackWait time.Duration
	// stateFS is the file system of the local state (nil: the OS's); tests
	// inject disk failures.
	stateFS vfs.FS
}

// Executor is the role.
type Executor struct {
	env   roles.Env
	cfg   Config
	log   *slog.Logger
	state *localstate.Store
	// report emits shell steps' results in groups (see reporter).
	report *reporter
	slots  chan struct{}

	mu struct {
		sync.Mutex
		running map[string]*task // by attemptKey
		consume jetstream.ConsumeContext
		// held are messages refused after halt, unacknowledged; Stop
		// naks them once the consumer is closed, for the next start.
		held []jetstream.Msg
	}
	// halt is closed by Stop, or by a fatal error: handle starts nothing
	// after it and a wait for a slot ends. closeHalt closes it once.
	halt      chan struct{}
	closeHalt func()
	fatalOnce sync.Once
	// shutdown is cancelled by Stop after the drain grace: attempts killed
	// by it are reported as interrupted, not cancelled.
	shutdown context.CancelFunc
	runCtx   context.Context
	wg       sync.WaitGroup
	started  bool

	epoch  atomic.Uint64 // newest leader epoch recorded
	fenced atomic.Uint64
	heldN  atomic.Uint64
}

type task struct {
	cancel   context.CancelFunc
	operator bool // cancelled by a task.cancel, not by shutdown
}

var _ roles.Role = (*Executor)(nil)

// Default consumer settings.
const (
	defaultAckWait = 30 * time.Second
	prefetch       = 256
)

// New returns the role; it starts nothing.
func New(env roles.Env, cfg Config) *Executor {
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	if cfg.ackWait <= 0 {
		cfg.ackWait = defaultAckWait
	}
	e := &Executor{env: env, cfg: cfg, log: env.Logger, slots: make(chan struct{}, cfg.Slots)}
	if e.log == nil {
		e.log = slog.Default()
	}
	e.mu.running = map[string]*task{}
	return e
}

// Name is "executor".
func (e *Executor) Name() string { return event.RoleExecutor }

// ConsumerName is the durable consumer an executor node reads its
// assignments with.
func ConsumerName(node string) string {
	return "exec_" + strings.NewReplacer(".", "_", "*", "_", ">", "_", " ", "_").Replace(node)
}

// Subjects are the subjects an executor named node consumes: its task
// assignments and cancels, and every leader election (for fencing).
func Subjects(node string) []string {
	return append(event.NodeSubjects(node), event.Subject(event.LeaderElected, ""))
}

// Stats are the executor's counters.
type Stats struct {
	// Epoch is the newest leader epoch the executor has recorded.
	Epoch uint64
	// Fenced counts assignments and cancels dropped since Start because a
	// newer leader had been elected before them (a deposed leader's).
	Fenced uint64
	// Held counts messages left unacknowledged since Start because the
	// executor was stopping or halted; they are delivered again later.
	Held uint64
	// Running is the number of attempts running now.
	Running int
}

// Stats returns the executor's counters.
func (e *Executor) Stats() Stats {
	e.mu.Lock()
	n := len(e.mu.running)
	e.mu.Unlock()
	return Stats{Epoch: e.epoch.Load(), Fenced: e.fenced.Load(), Held: e.heldN.Load(), Running: n}
}

// Start opens the local state, reports attempts a crash interrupted,
// records the newest leader election, announces the executor and begins
// consuming assignments.
func (e *Executor) Start(ctx context.Context) error {
	if e.started {
		return nil
	}
	st, err := localstate.OpenFS(e.cfg.StateDir, e.cfg.stateFS, e.log)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	e.state = st
	halt := make(chan struct{})
	var once sync.Once
	e.halt, e.closeHalt = halt, func() { once.Do(func() { close(halt) }) }
	e.runCtx, e.shutdown = context.WithCancel(context.WithoutCancel(ctx))
	fail := func(err error) error {
		e.shutdown()
		st.Close()
		return err
	}
	if err := e.reportInterrupted(ctx); err != nil {
		return fail(err)
	}
	cons, err := e.cfg.JS.CreateOrUpdateConsumer(ctx, bus.EventsStream, jetstream.ConsumerConfig{
		Durable:        ConsumerName(e.env.Node),
		Description:    "task assignments and cancels for executor " + e.env.Node + ", and leader elections",
		FilterSubjects: Subjects(e.env.Node),
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        e.cfg.ackWait,
		MaxAckPending:  4096,
	})
	if err != nil {
		return fail(fmt.Errorf("executor: consumer: %w", err))
	}
	// After the consumer exists, so that every election is either before
	// this read or delivered by the consumer.
	if err := e.seedEpoch(ctx); err != nil {
		return fail(err)
	}
	online := event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{Slots: e.cfg.Slots, Incarnation: e.cfg.Incarnation})
	if err := e.env.Emit.Emit(ctx, online); err != nil {
		return fail(fmt.Errorf("executor: announce: %w", err))
	}
	e.report = newReporter(e.env.Emit, st, e.log, e.fatal)
	cc, err := cons.Consume(e.handle, jetstream.PullMaxMessages(prefetch))
	if err != nil {
		e.report.stop()
		return fail(fmt.Errorf("executor: consume: %w", err))
	}
	e.mu.Lock()
	e.mu.consume = cc
	e.mu.Unlock()
	if e.halted() {
		cc.Stop() // a fatal error in the first messages
	}
	e.started = true
	e.log.Info("executor started", "slots", e.cfg.Slots, "epoch", e.epoch.Load())
	return nil
}

// Stop stops taking assignments — messages already fetched but not started
// are left for the next start — lets running attempts finish until ctx
// ends, then kills what is left (reported as interrupted) and waits.
func (e *Executor) Stop(ctx context.Context) error {
	if !e.started {
		return nil
	}
	e.started = false
	e.closeHalt()
	e.mu.Lock()
	cc := e.mu.consume
	e.mu.consume = nil
	e.mu.Unlock()
	cc.Stop()
	<-cc.Closed() // handle has returned and will not be called again
	e.releaseHeld()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.log.Warn("executor stopping: killing running steps")
		e.shutdown()
		<-done
	}
	e.shutdown()
	e.report.stop() // every step has returned: nothing more is queued
	return e.state.Close()
}

// halted reports whether the executor takes no more work.
func (e *Executor) halted() bool {
	select {
	case <-e.halt:
		return true
	default:
		return false
	}
}

// hold leaves m unacknowledged: it is not started now and is delivered
// again after a restart.
func (e *Executor) hold(m jetstream.Msg) {
	e.heldN.Add(1)
	e.mu.Lock()
	e.mu.held = append(e.mu.held, m)
	e.mu.Unlock()
}

// releaseHeld naks the held messages once the consumer is closed, so that
// the server delivers them to the next start at once rather than after
// AckWait (with no pull request open, nobody receives them now).
func (e *Executor) releaseHeld() {
	e.mu.Lock()
	held := e.mu.held
	e.mu.held = nil
	e.mu.Unlock()
	for _, m := range held {
		_ = m.Nak()
	}
}

// fatal halts the executor if err is a failed sync of the local state, and
// reports whether it did. The first such error goes to Config.OnFatal.
func (e *Executor) fatal(err error) bool {
	if !errors.Is(err, localstate.ErrSync) {
		return false
	}
	e.fatalOnce.Do(func() {
		e.log.Error("executor halted: local state failed to sync", "err", err)
		e.closeHalt()
		e.mu.Lock()
		cc := e.mu.consume
		e.mu.Unlock()
		if cc != nil {
			cc.Stop()
		}
		if e.cfg.OnFatal != nil {
			e.cfg.OnFatal(err)
		}
	})
	return true
}

// reportInterrupted reports the attempts a crash interrupted as failed, in
// one Emit, then records them finished in one commit.
func (e *Executor) reportInterrupted(ctx context.Context) error {
	left, err := e.state.Unfinished()
	if err != nil {
		return fmt.Errorf("executor: read local state: %w", err)
	}
	if len(left) == 0 {
		return nil
	}
	drafts := make([]event.Draft, len(left))
	for i, a := range left {
		drafts[i] = event.MustDraft(event.TaskFinished, a.Run, event.TaskFinishedData{
			Step: a.Step, Attempt: a.Attempt, Node: e.env.Node,
			Status: event.TaskFailed, Class: event.ClassTransient, ExitCode: -1, Interrupted: true,
			Error:   orchestrator.InterruptedPrefix + ": the executor stopped during the attempt (started " + a.Started.Format(time.RFC3339) + ")",
			Started: a.Started,
		})
	}
	if err := e.env.Emit.Emit(ctx, drafts...); err != nil {
		return fmt.Errorf("executor: report %d interrupted attempts (first %s/%s#%d): %w", len(left), left[0].Run, left[0].Step, left[0].Attempt, err)
	}
	if err := e.state.MarkFinishedAll(left...); err != nil {
		e.fatal(err)
		return fmt.Errorf("executor: %w", err)
	}
	for _, a := range left {
		e.log.Warn("attempt interrupted by a restart", "run", a.Run, "step", a.Step, "attempt", a.Attempt)
	}
	return nil
}
