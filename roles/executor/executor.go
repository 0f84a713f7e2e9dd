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
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/executor/core"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/agentic-dev/agentic/roles/executor/pluginhost"
	"github.com/agentic-dev/agentic/roles/executor/runner"
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
	// Queue is how many assignments the executor accepts beyond Slots and
	// holds, in arrival order, until a slot frees; negative means as many
	// as Slots. It is announced in executor.online: a leader gives this
	// executor at most Slots + Queue attempts not yet finished.
	Queue int
	// Capabilities the executor offers (announced in executor.online).
	Capabilities []string
	// Version is the build announced in executor.online.
	Version string
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
	// Safety is the policy source the executor judges assignments with
	// again, and the hardening of steps (environment allowlist, user,
	// resource limits), which it sets in Runner.
	Safety Safety
	// Git configures git runs (git.go): where their worktrees live and the
	// forges pull requests are opened on.
	Git GitConfig
	// Paused, if set, returns why the executor must start no new attempt
	// (the data dir below its free-space floor), or nil: while it does,
	// accepted attempts stay queued, and start once it returns nil.
	Paused func() error
	// Plugins is where the executor learns the plugins in force and runs
	// their tools (tools.go); its zero value runs none.
	Plugins Plugins
	// ackWait is the consumer's AckWait (default 30s); tests shorten it to
	// see redeliveries.
	ackWait time.Duration
	// stateFS is the file system of the local state (nil: the OS's); tests
	// inject disk failures.
	stateFS vfs.FS
	// received, if set, is called with each message the consumer
	// delivers, as it arrives (BenchmarkToolStepOverhead times from it).
	received func(jetstream.Msg)
	// judging, if set, is called with each step as vet begins judging it
	// (TestJudgedWhileRecording).
	judging func(event.Step)
}

// Executor is the role. Its decisions are its core's (package core), owned
// by the loop goroutine; the rest is plumbing: the consumer, the local
// state, the goroutines that record, run and report attempts.
type Executor struct {
	env   roles.Env
	cfg   Config
	log   *slog.Logger
	state *localstate.Store
	// report emits shell steps' results in groups (see reporter).
	report *reporter
	// arts is the artifact store of steps' inputs and outputs
	// (artifacts.go).
	arts artifactStore
	// core decides; only the loop goroutine steps it (and Stop, once the
	// loop has ended). snap is its snapshot after the loop's last round,
	// for readers (Stats, the reporter, the backlog watchers).
	core *core.Core
	snap atomic.Pointer[core.Snapshot]
	// lp is the loop's own state: only the loop goroutine touches it.
	lp loopState

	mu struct {
		sync.Mutex
		// inbox holds the messages the consumer delivered that the loop
		// has not taken yet: the consume callback only appends here.
		inbox []jetstream.Msg
		// inputs are what other goroutines hand the loop's core: process
		// exits, reported results, answered start records, backlogs read.
		inputs []input
		cons   jetstream.Consumer
		// consume is nil while a lost consumer is being made again.
		consume jetstream.ConsumeContext
		// lost is set when the consumer was deleted under the executor:
		// the loop has it made again.
		lost bool
	}
	// wake tells the loop that something changed (capacity 1).
	wake chan struct{}
	// loopCtx is cancelled by Stop to end the loop and its helpers;
	// loopDone is closed when they have ended.
	loopCtx  context.Context
	endLoop  context.CancelFunc
	loopDone chan struct{}
	// drained is closed once a drain has completed (see Drained).
	drained chan struct{}
	// halt is closed by Stop, or by a fatal error: the loop starts
	// nothing after it. closeHalt closes it once.
	halt      chan struct{}
	closeHalt func()
	fatalOnce sync.Once
	// shutdown is cancelled by Stop after the drain grace: attempts killed
	// by it are reported as interrupted, not cancelled.
	shutdown context.CancelFunc
	runCtx   context.Context
	wg       sync.WaitGroup
	// starting counts the starter goroutines (see startGroup).
	starting sync.WaitGroup
	started  bool

	// position is the consumer position last recorded in the local state
	// (see consumer.go), 0 before it is known.
	position atomic.Uint64
	// probe asks the consumer watcher to look now (capacity 1).
	probe chan struct{}
	// consumerHealth is the "consumer" check's result.
	consumerHealth health.State
	// policies are the policy versions loaded to judge assignments with.
	policies *policies
	// judged keeps the judgements of shell steps (see judge).
	judged judgeCache
	// unjudgedWarned is set once an assignment without a policy version
	// was logged.
	unjudgedWarned atomic.Bool
	// policyRefused counts the attempts vet refused.
	policyRefused atomic.Uint64
	// tools runs the plugin servers (nil without Config.Plugins).
	tools *pluginhost.Host
	// gitw keeps the worktrees of git runs (git.go).
	gitw gitWork
}

var _ roles.Role = (*Executor)(nil)

// Consumer settings.
const (
	defaultAckWait = 30 * time.Second
	prefetch       = 256
	// minAckPending is the consumer's least MaxAckPending: the queued
	// assignments are unacknowledged, and control messages (cancels,
	// elections, drains) must still be delivered behind them.
	minAckPending = 4096
	// refuseDelay is how long an assignment the executor has no room for
	// waits on the server before it is delivered again.
	refuseDelay = time.Second
	// consumeHeartbeat is the idle heartbeat the executor's pulls ask of
	// the server, and consumeExpiry how long one pull waits. Shorter than
	// the client's default (15 s, half the expiry): a pull the server lost
	// (JetStream restarted after a full disk, see embedded.Server) is made
	// again after two missed heartbeats, within seconds.
	consumeHeartbeat = 2 * time.Second
	consumeExpiry    = 30 * time.Second
)

// New returns the role; it starts nothing.
func New(env roles.Env, cfg Config) *Executor {
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	if cfg.Queue < 0 {
		cfg.Queue = cfg.Slots
	}
	if cfg.ackWait <= 0 {
		cfg.ackWait = defaultAckWait
	}
	cfg.Safety.applyTo(&cfg.Runner)
	e := &Executor{env: env, cfg: cfg, log: env.Logger, drained: make(chan struct{}), policies: newPolicies(cfg.Safety.Policies)}
	if e.log == nil {
		e.log = slog.Default()
	}
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
// assignments and cancels, every leader election (for fencing) and every
// drain request (it acts on those naming it).
func Subjects(node string) []string {
	return append(event.NodeSubjects(node), event.Subject(event.LeaderElected, ""), event.Subject(event.NodeDrain, ""))
}

// Capacity is how many attempts the executor accepts at once: Slots
// running plus Queue waiting.
func (e *Executor) Capacity() int { return e.cfg.Slots + e.cfg.Queue }

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
	// Refused counts assignment messages given back to the server since
	// Start because the executor held Slots + Queue attempts already.
	Refused uint64
	// Dropped counts queued attempts cancelled before they started.
	Dropped uint64
	// Running is the number of attempts whose process runs now.
	Running int
	// Queued is the number of accepted attempts waiting for a slot.
	Queued int
	// Stalls counts the times the loop found it had not run for stallGap
	// (the process stopped or starved) and read the backlog again before
	// starting anything.
	Stalls uint64
	// Draining is true once a drain for this node was read.
	Draining bool
	// PolicyRefused counts the attempts the executor refused since Start
	// after judging them again (class policy: denied, not approved for
	// exactly this step, outside the file scope, or a policy version it
	// could not fetch or verify).
	PolicyRefused uint64
}

// Stats returns the executor's counters.
func (e *Executor) Stats() Stats {
	st := Stats{PolicyRefused: e.policyRefused.Load()}
	if s := e.snap.Load(); s != nil {
		st.Epoch, st.Fenced, st.Held, st.Refused, st.Dropped = s.Epoch, s.Fenced, s.Held, s.Refused, s.Dropped
		st.Running, st.Queued, st.Stalls, st.Draining = s.Running, s.Queued, s.Stalls, s.Draining
	}
	return st
}

// Drained is closed once the executor, drained by a node.drain naming its
// node, has no attempt left running: it starts nothing more, and the node
// should stop (agentd does, and exits 0).
func (e *Executor) Drained() <-chan struct{} { return e.drained }

// consumerConfig is the executor's durable consumer.
func (e *Executor) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        ConsumerName(e.env.Node),
		Description:    "task assignments and cancels for executor " + e.env.Node + ", leader elections and drain requests",
		FilterSubjects: Subjects(e.env.Node),
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        e.cfg.ackWait,
		MaxAckPending:  max(minAckPending, 4*e.Capacity()),
	}
}

// Start opens the local state, reports attempts a crash interrupted,
// records the newest leader election, notes the backlog its consumer holds
// (nothing starts before it has been read), announces the executor and
// begins consuming.
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
	e.wake, e.loopDone, e.probe = make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
	e.loopCtx, e.endLoop = context.WithCancel(context.Background())
	e.runCtx, e.shutdown = context.WithCancel(context.WithoutCancel(ctx))
	e.lp.init()
	fail := func(err error) error {
		e.endLoop()
		e.shutdown()
		st.Close()
		return err
	}
	if err := e.reportInterrupted(ctx); err != nil {
		return fail(err)
	}
	drainedSeq, err := st.Drained()
	if err != nil {
		return fail(fmt.Errorf("executor: %w", err))
	}
	cfg, recreated, err := e.startConfig(ctx)
	if err != nil {
		return fail(err)
	}
	var cons jetstream.Consumer
	if recreated > 0 {
		cons, err = e.createFresh(ctx, cfg)
	} else {
		cons, err = e.cfg.JS.CreateOrUpdateConsumer(ctx, bus.EventsStream, cfg)
	}
	if err != nil {
		return fail(fmt.Errorf("executor: consumer: %w", err))
	}
	// After the consumer exists, so that every election is either before
	// this read or delivered by the consumer.
	if err := e.seedEpoch(ctx); err != nil {
		return fail(err)
	}
	mark, err := readBacklog(ctx, cons)
	if err != nil {
		return fail(err)
	}
	epoch, err := st.Epoch()
	if err != nil {
		return fail(fmt.Errorf("executor: read epoch: %w", err))
	}
	e.core = core.New(core.Config{
		Node: e.env.Node, Slots: e.cfg.Slots, Queue: e.cfg.Queue, KeepAlive: e.cfg.ackWait / 3, StallGap: stallGap,
		Epoch: epoch, DrainedSeq: drainedSeq,
	})
	e.do(e.core.Step(core.Begin{Now: time.Now(), Delivered: mark.delivered, Pending: mark.pending}))
	e.publish()
	e.position.Store(0)
	e.notePosition(mark.ackFloor + 1)
	online := event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{
		Slots: e.cfg.Slots, Queue: e.cfg.Queue, Capabilities: e.cfg.Capabilities, Version: e.cfg.Version, Incarnation: e.cfg.Incarnation,
	})
	if err := e.env.Emit.Emit(ctx, online); err != nil {
		return fail(fmt.Errorf("executor: announce: %w", err))
	}
	e.report = newReporter(e.env.Emit, st, e.log, e.fatal, func() bool { return e.snap.Load().Queued > 0 })
	e.mu.Lock()
	e.mu.cons = cons
	e.mu.Unlock()
	e.lp.helpers.Add(1)
	go func() {
		defer e.lp.helpers.Done()
		e.watchConsumer()
	}()
	go e.loop()
	if err := e.consume(cons); err != nil {
		e.endLoop()
		<-e.loopDone
		e.report.stop()
		return fail(err)
	}
	e.startTools(ctx)
	e.sweepGit() // git.go
	e.started = true
	if recreated > 0 {
		e.consumerHealth.Set(nil)
		e.log.Info("executor consumer recreated", "from_stream_seq", recreated)
	}
	e.logSafety()
	e.log.Info("executor started", "slots", e.cfg.Slots, "queue", e.cfg.Queue, "capabilities", e.cfg.Capabilities,
		"epoch", epoch, "backlog", mark.pending)
	return nil
}

// consume begins delivering cons's messages to the loop.
func (e *Executor) consume(cons jetstream.Consumer) error {
	cc, err := cons.Consume(e.receive, e.consumeOpts()...)
	if err != nil {
		return fmt.Errorf("executor: consume: %w", err)
	}
	e.mu.Lock()
	e.mu.cons, e.mu.consume = cons, cc
	e.mu.Unlock()
	if e.halted() {
		cc.Stop() // a fatal error in the first messages
	}
	return nil
}

// consumeOpts are the options of every Consume of the executor consumer.
func (e *Executor) consumeOpts() []jetstream.PullConsumeOpt {
	return []jetstream.PullConsumeOpt{
		jetstream.PullMaxMessages(prefetch),
		jetstream.PullExpiry(consumeExpiry),
		jetstream.PullHeartbeat(consumeHeartbeat),
		jetstream.ConsumeErrHandler(e.consumeErr),
	}
}

// consumeErr is told of the consumer's errors. A deleted consumer is
// recreated by the loop. After any other (missing heartbeats, no
// responders) the client pulls again by itself, and the watcher looks at
// once whether the consumer still exists — a pull from a missing one
// never fails by itself.
func (e *Executor) consumeErr(_ jetstream.ConsumeContext, err error) {
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
		e.lose(err)
		return
	}
	e.log.Debug("executor consumer", "err", err)
	e.probeConsumer()
}

// Stop stops taking assignments — messages fetched but not started are
// left for the next start — lets running attempts finish until ctx ends,
// then kills what is left (reported as interrupted) and waits.
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
	if cc != nil { // nil while a lost consumer is being recreated
		cc.Stop()
		<-cc.Closed() // the callback has returned and will not be called again
	}
	e.endLoop()
	<-e.loopDone // nothing starts any more, and no consumer is recreated
	e.starting.Wait()
	// The loop has ended: Stop steps the core now. It acknowledges what
	// the last starters recorded and holds what was delivered meanwhile.
	e.syncHalt()
	for e.takeMail(false) {
	}
	e.mu.Lock()
	cc = e.mu.consume // one the recreation made meanwhile
	e.mu.consume = nil
	e.mu.Unlock()
	if cc != nil {
		cc.Stop()
		<-cc.Closed()
	}
	for e.takeMail(false) {
	}
	// Forget what was recorded ahead and did not start, and give every
	// message held back to the server, so that the next start receives
	// them at once rather than after AckWait.
	e.do(e.core.Step(core.Release{}))
	e.publish()
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
	e.stopTools()   // no tool call runs any more
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
		e.poke() // the loop tells the core (syncHalt)
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
			Error:   event.LegacyInterruptedPrefix + ": the executor stopped during the attempt, or just before its process started (recorded started " + a.Started.Format(time.RFC3339) + ")",
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
