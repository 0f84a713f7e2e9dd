package executor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/core"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/nats-io/nats.go/jetstream"
)

// The loop is the one goroutine that owns the executor's core (package
// core, a pure state machine that decides what is acknowledged, recorded,
// started, killed and reported). Everything else hands it inputs: the
// consume callback (receive) appends each message to the inbox, the
// attempt and starter goroutines and the backlog watchers append inputs
// (process exits, reported results, answered records, backlogs read), and
// each pokes the loop. The loop turns messages into core.Delivery — it
// verifies them and reads the local state they need (the epoch in force,
// the attempts' records) — steps the core, and carries out the actions it
// returns (do). Readers (Stats, the reporter, the watchers) see the
// core's snapshot, published through an atomic pointer after each round.

// loopState is the loop's own state: only the loop goroutine touches it
// (and Stop, once the loop has ended).
type loopState struct {
	// msgs are the messages handed to the core and not yet acknowledged,
	// refused or terminated, by stream sequence: the newest delivery of
	// each, which an action reaches.
	msgs map[uint64]jetstream.Msg
	// tasks are the attempts whose process may run (recorded or being
	// recorded), for Kill.
	tasks map[core.Key]*task
	// queued is how many attempts waited for a slot after the last pass.
	queued int
	// helpers are the loop's goroutines (backlog watchers, consumer
	// recreation); the loop waits for them before it ends.
	helpers sync.WaitGroup
	// passes counts the loop's passes (read by benchmarks once it ended).
	passes int
}

func (l *loopState) init() {
	l.msgs = map[uint64]jetstream.Msg{}
	l.tasks = map[core.Key]*task{}
	l.queued = 0
}

// input is what a goroutine hands the loop: a core input, and the keys of
// tasks that will never run (a start record failed).
type input struct {
	in   core.Input
	gone []core.Key
}

// task is an attempt whose process may run: cancel ends its context, with
// errCancelled when a task.cancel asks for it.
type task struct {
	cancel context.CancelCauseFunc
	// verdict, when set, is the attempt's judgement (vet), made while
	// its start was being recorded (prejudge); runPlain takes it rather
	// than judging again.
	verdict *verdict
}

// verdict is what vet judged of an attempt.
type verdict struct {
	j   judged
	err error
}

// errCancelled is the cause of a context cancelled by a task.cancel (not by
// shutdown).
var errCancelled = errors.New("executor: cancelled by task.cancel")

// cancelledByOperator reports whether ctx ended because of a task.cancel,
// not because the executor shut down.
func cancelledByOperator(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errCancelled)
}

// Loop timing.
const (
	// tick is the loop's clock: keep-alives of held messages, and the
	// stall check.
	tick = 250 * time.Millisecond
	// stallGap is how long the loop may go without running before it
	// assumes the process was stopped (kill -STOP) or starved: it then
	// reads the consumer's backlog again before starting anything, so
	// that a cancel queued behind an assignment is seen first.
	stallGap = time.Second
)

// receive is the consume callback: it hands m to the loop and returns.
func (e *Executor) receive(m jetstream.Msg) {
	if e.cfg.received != nil {
		e.cfg.received(m)
	}
	e.mu.Lock()
	e.mu.inbox = append(e.mu.inbox, m)
	e.mu.Unlock()
	e.poke()
}

// send hands the loop an input, and wakes it if wake.
func (e *Executor) send(in input, wake bool) {
	e.mu.Lock()
	e.mu.inputs = append(e.mu.inputs, in)
	e.mu.Unlock()
	if wake {
		e.poke()
	}
}

// poke wakes the loop.
func (e *Executor) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Executor) loop() {
	defer close(e.loopDone)
	defer e.lp.helpers.Wait()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-e.loopCtx.Done():
			return
		case <-e.wake:
		case <-t.C:
		}
		e.pass()
		e.lp.passes++
	}
}

// pass hands the core everything the inbox and the inputs hold, then lets
// it start what may start.
func (e *Executor) pass() {
	for e.takeMail(true) {
	}
	e.syncHalt()
	e.do(e.core.Step(core.Pass{Now: time.Now(), Paused: !e.core.Halted() && e.paused()}))
	s := e.publish()
	if e.lp.queued > 0 && s.Queued == 0 {
		// Results lingering for company go out now: nothing waits for a
		// slot any more (see reporter.loop).
		e.report.kick()
	}
	e.lp.queued = s.Queued
}

// takeMail hands the core what the mailbox holds and reports whether it
// held anything. It tells the core the time first (Tick: keep-alives, and
// the stall check — after the mailbox was taken, so that a loop held up
// taking it notices) and once it handled the batch (Alive). Only a Stop
// takes the mail without ticking.
func (e *Executor) takeMail(tick bool) bool {
	e.mu.Lock()
	msgs, ins, lost := e.mu.inbox, e.mu.inputs, e.mu.lost
	e.mu.inbox, e.mu.inputs, e.mu.lost = nil, nil, false
	e.mu.Unlock()
	e.syncHalt()
	if tick {
		e.do(e.core.Step(core.Tick{Now: time.Now()}))
		defer func() { e.do(e.core.Step(core.Alive{Now: time.Now()})) }()
	}
	if lost {
		e.do(e.core.Step(core.ConsumerLost{}))
	}
	for _, in := range ins {
		e.apply(in)
	}
	for _, m := range msgs {
		e.deliver(m)
	}
	e.publish()
	return lost || len(ins)+len(msgs) > 0
}

// apply hands the core one input from another goroutine.
func (e *Executor) apply(in input) {
	for _, k := range in.gone {
		delete(e.lp.tasks, k)
	}
	if x, ok := in.in.(core.Exited); ok {
		delete(e.lp.tasks, x.Key)
	}
	e.do(e.core.Step(in.in))
}

// syncHalt tells the core that the executor halted, if it did (a fatal
// error on another goroutine, or Stop).
func (e *Executor) syncHalt() {
	if e.halted() && !e.core.Halted() {
		e.do(e.core.Step(core.Halt{}))
	}
}

// publish makes the core's snapshot what readers see, and returns it.
func (e *Executor) publish() core.Snapshot {
	s := e.core.Snapshot()
	e.snap.Store(&s)
	return s
}

// deliver turns a delivered message into a core.Delivery — verified, with
// the local state it needs read — and hands it to the core.
func (e *Executor) deliver(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	seq := md.Sequence.Stream
	e.lp.msgs[seq] = m // the newest delivery: actions go through it
	d := core.Delivery{Now: time.Now(), Seq: seq, NumDelivered: md.NumDelivered}
	e.syncHalt()
	if !e.core.Halted() {
		e.read(&d, m, md)
	}
	e.do(e.core.Step(d))
}

// read fills d from m: its kind and events, verified, and what the local
// state says of them.
func (e *Executor) read(d *core.Delivery, m jetstream.Msg, md *jetstream.MsgMetadata) {
	env, err := e.cfg.Verifier.Verify(m.Data(), m.Subject(), md.Timestamp)
	if err != nil {
		e.log.Warn("refused message", "subject", m.Subject(), "stream_seq", d.Seq, "err", err)
		d.Kind = core.KindRefused
		return
	}
	switch env.Type {
	case event.LeaderElected:
		d.Kind = core.KindElect
		for _, ev := range env.Events {
			var el event.LeaderElectedData
			if err := ev.Decode(&el); err != nil {
				e.log.Warn("bad leader election", "stream_seq", d.Seq, "err", err)
				continue
			}
			d.Epochs = append(d.Epochs, el.Epoch)
		}
	case event.NodeDrain:
		d.Kind = core.KindDrain
		for _, ev := range env.Events {
			var dr event.NodeDrainData
			if ev.Decode(&dr) == nil {
				d.Drains = append(d.Drains, dr)
			}
		}
	case event.TaskAssigned:
		d.Kind = core.KindAssign
		e.readAssignments(d, env.Events)
	case event.TaskCancel:
		d.Kind = core.KindCancel
		e.readCancels(d, env.Events)
	}
}

// fence reads the leader epoch in force at d's stream sequence: the rule
// the ledger applies, whatever order the messages were delivered in.
func (e *Executor) fence(d *core.Delivery) bool {
	fence, err := e.state.EpochAt(d.Seq)
	if err != nil {
		e.log.Error("read leader epoch", "stream_seq", d.Seq, "err", err)
		d.Unavailable = true
		return false
	}
	d.Fence = fence
	return true
}

// readAssignments decodes the assignments to this node and reads their
// records.
func (e *Executor) readAssignments(d *core.Delivery, evs []event.Event) {
	if !e.fence(d) {
		return
	}
	for _, ev := range evs {
		var a event.TaskAssignedData
		if err := ev.Decode(&a); err != nil {
			e.log.Warn("bad assignment", "stream_seq", d.Seq, "err", err)
			continue
		}
		if a.Node != e.env.Node {
			continue
		}
		as := core.Assignment{Attempt: core.Attempt{Run: ev.Run, Data: a}}
		if a.Step.Kind != event.KindNoop && !a.FencedBy(d.Fence) {
			rec, seen, err := e.state.Lookup(ev.Run, a.Step.ID, a.Attempt)
			switch {
			case errors.Is(err, localstate.ErrInvalid):
				e.log.Warn("bad assignment", "stream_seq", d.Seq, "err", err)
				continue
			case err != nil:
				e.log.Error("assignment", "run", ev.Run, "stream_seq", d.Seq, "err", err)
				d.Unavailable = true
				return
			case seen:
				as.Recorded = rec.State
			}
		}
		d.Assign = append(d.Assign, as)
	}
}

// readCancels decodes the cancels for this node and reads their records.
func (e *Executor) readCancels(d *core.Delivery, evs []event.Event) {
	if !e.fence(d) {
		return
	}
	for _, ev := range evs {
		var c event.TaskCancelData
		if err := ev.Decode(&c); err != nil || c.Node != e.env.Node {
			continue
		}
		cn := core.Cancel{Run: ev.Run, Data: c}
		if !c.FencedBy(d.Fence) {
			_, seen, err := e.state.Lookup(ev.Run, c.Step, c.Attempt)
			switch {
			case errors.Is(err, localstate.ErrInvalid):
				continue
			case err != nil:
				e.log.Error("cancel", "run", ev.Run, "stream_seq", d.Seq, "err", err)
				d.Unavailable = true
				return
			}
			cn.Recorded = seen
		}
		d.Cancels = append(d.Cancels, cn)
	}
}

// take returns the message at seq and forgets it.
func (e *Executor) take(seq uint64) jetstream.Msg {
	m := e.lp.msgs[seq]
	delete(e.lp.msgs, seq)
	return m
}

// do carries out the core's actions, in order.
func (e *Executor) do(acts []core.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case core.Ack:
			if m := e.take(a.Seq); m != nil {
				_ = m.Ack()
			}
		case core.Nak:
			if m := e.take(a.Seq); m != nil && a.Later {
				_ = m.NakWithDelay(refuseDelay)
			} else if m != nil {
				_ = m.Nak()
			}
		case core.Term:
			if m := e.take(a.Seq); m != nil {
				_ = m.Term()
			}
		case core.Hold:
			// Kept in msgs, unanswered, until Release gives it back.
		case core.Touch:
			for _, seq := range a.Seqs {
				if m := e.lp.msgs[seq]; m != nil {
					_ = m.InProgress()
				}
			}
		case core.DoubleAck:
			e.doubleAck(a.Seq)
		case core.RecordEpochs:
			e.answer(a.ID, e.recordEpochs(a.Seq, a.Epochs))
		case core.RecordDropped:
			e.answer(a.ID, e.state.MarkDropped(attemptsOf(a.Attempts)...))
		case core.RecordDrained:
			e.answer(a.ID, e.state.MarkDrained(a.Seq))
		case core.RunNoops:
			e.answer(a.ID, e.runNoops(a.Attempts))
		case core.RecordStarted:
			e.startGroup(a)
		case core.StartRecorded:
			e.launch(a.Attempt, a.At)
		case core.Forget:
			if err := e.state.Forget(attemptsOf(a.Attempts)...); err != nil {
				e.log.Warn("forget attempts recorded ahead; the next start reports them interrupted", "attempts", len(a.Attempts), "err", err)
			}
		case core.Kill:
			if t := e.lp.tasks[a.Key]; t != nil {
				t.cancel(errCancelled)
			}
		case core.CancelledBeforeStart:
			e.cancelledBeforeStart(a)
		case core.Drained:
			close(e.drained)
		case core.WatchBacklog:
			e.watchBacklog(a.Gen)
		case core.Recreate:
			e.recreate(a.Gen)
		case core.Log:
			e.log.Log(context.Background(), a.Level, a.Msg, a.Args...)
		}
	}
}

// answer hands the core the result of a record it asked for. A failed
// sync halts the executor first.
func (e *Executor) answer(id uint64, err error) {
	halt := false
	if err != nil {
		halt = e.fatal(err) || e.halted()
		e.syncHalt()
	}
	e.do(e.core.Step(core.Recorded{ID: id, Err: err, Halt: halt}))
}

// doubleAck acknowledges the drain at seq, waiting for the server's answer.
func (e *Executor) doubleAck(seq uint64) {
	m := e.take(seq)
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(e.loopCtx, 5*time.Second)
	err := m.DoubleAck(ctx)
	cancel()
	if err != nil {
		e.log.Warn("acknowledge the drain request", "stream_seq", seq, "err", err)
	}
}

func attemptsOf(ks []core.Key) []localstate.Attempt {
	out := make([]localstate.Attempt, len(ks))
	for i, k := range ks {
		out[i] = localstate.Attempt{Run: k.Run, Step: k.Step, Attempt: k.Attempt}
	}
	return out
}

// cancelledBeforeStart reports an attempt cancelled before its process
// started: with the next group, or — recorded started ahead — as its
// result, recorded finished after it, on a goroutine of its own that
// answers Reported.
func (e *Executor) cancelledBeforeStart(a core.CancelledBeforeStart) {
	d := event.MustDraft(event.TaskFinished, a.Attempt.Run, event.TaskFinishedData{
		Step: a.Attempt.Data.Step.ID, Attempt: a.Attempt.Data.Attempt, Node: e.env.Node,
		Status: event.TaskCancelled, Class: event.ClassTransient, ExitCode: -1,
		Error:       "cancelled before it started (" + a.Why + ")",
		CommandHash: CommandHash(a.Attempt.Data.Step.Run),
	})
	if !a.Finish {
		e.report.note(d)
		return
	}
	k := a.Attempt.Key()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		_ = e.report.finished(d, localstate.Attempt{Run: k.Run, Step: k.Step, Attempt: k.Attempt})
		e.send(input{in: core.Reported{Key: k}}, e.draining()) // a drain may wait for it
	}()
}

// draining reports whether the executor drains (only then does a
// reported result wake the loop).
func (e *Executor) draining() bool {
	s := e.snap.Load()
	return s != nil && s.Draining
}

// paused reports Config.Paused (the loop's tick checks it again).
func (e *Executor) paused() bool {
	return e.cfg.Paused != nil && e.cfg.Paused() != nil
}

// runNoops runs noop attempts and emits their started and finished events
// in one synced outbox write before their messages are acknowledged: they
// keep no crash memory, so the acknowledgement must not precede the
// result. Every task.started first, then every task.finished: each step's
// started still precedes its finished, and the outbox packs each type's
// run into one signed message.
func (e *Executor) runNoops(noops []core.Attempt) error {
	var starts, results []event.Draft
	for _, q := range noops {
		d := noopDrafts(e.runCtx, e.env.Node, e.cfg.Runner, q.Run, q.Data)
		starts, results = append(starts, d[0]), append(results, d[1])
	}
	if err := e.env.Emit.Emit(e.runCtx, append(starts, results...)...); err != nil {
		return err
	}
	return nil
}

// startGroup hands a start record to a starter goroutine, which records
// the attempts started — one synced commit, shared with concurrent
// records (so the loop never waits for an fsync) — answers the core, and
// then starts each attempt of r.Start (the last on the starter's own
// goroutine). r.Ahead are only recorded: they start later, as slots free
// (StartRecorded). If the record fails, none of them starts; on a failed
// sync the executor halts.
func (e *Executor) startGroup(r core.RecordStarted) {
	recs := make([]localstate.Attempt, 0, len(r.Start)+len(r.Ahead))
	keys := make([]core.Key, len(r.Start))
	tasks := make([]*task, len(r.Start))
	ctxs := make([]context.Context, len(r.Start))
	for i, a := range slices.Concat(r.Start, r.Ahead) {
		k := a.Key()
		recs = append(recs, localstate.Attempt{Run: k.Run, Step: k.Step, Attempt: k.Attempt, State: localstate.StateStarted, Started: r.At})
		if i < len(r.Start) {
			ctx, cancel := context.WithCancelCause(e.runCtx)
			keys[i], ctxs[i], tasks[i] = k, ctx, &task{cancel: cancel}
			e.lp.tasks[k] = tasks[i]
		}
	}
	e.starting.Add(1)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		err := errHalted
		if !e.halted() { // Stop began: start nothing more
			wait := e.state.BeginStarted(recs...)
			e.prejudge(r.Start, ctxs, tasks) // beside the record's fsync
			err = wait()
		}
		var gone []core.Key
		if err != nil {
			if err != errHalted {
				e.log.Error("record attempts started", "attempts", len(recs), "err", err)
				e.fatal(err)
			}
			for _, t := range tasks {
				t.cancel(nil)
			}
			gone = keys
		} else {
			for i := range len(r.Start) - 1 { // the last runs on this goroutine, below
				e.wg.Add(1)
				go e.attempt(ctxs[i], r.Start[i], r.At, tasks[i])
			}
		}
		halt := errors.Is(err, errHalted) || errors.Is(err, localstate.ErrSync) || (err != nil && e.halted())
		// Recorded: the loop acknowledges the messages at its next pass —
		// woken by a message, a slot freeing or its tick — not worth a
		// wake-up of its own unless slots freed or attempts wait,
		// recorded, for the next slot.
		e.send(input{in: core.Recorded{ID: r.ID, Err: err, Halt: halt}, gone: gone}, err != nil || len(r.Ahead) > 0)
		e.starting.Done()
		if err == nil && len(r.Start) > 0 {
			last := len(r.Start) - 1
			e.wg.Add(1)
			e.attempt(ctxs[last], r.Start[last], r.At, tasks[last])
		}
	}()
}

// prejudge judges again (vet) each attempt of start whose judgement needs
// nothing fetched — its policy version cached, or none named — while its
// start is being recorded: judging changes nothing an attempt that never
// starts would have to undo, and the attempt still starts only once its
// record is synced; runPlain takes the verdict then. An attempt whose
// policy must be fetched, or that runs in a git worktree (runGitStep
// judges it once its worktree is known), is judged when it runs, as
// before.
func (e *Executor) prejudge(start []core.Attempt, ctxs []context.Context, tasks []*task) {
	for i, a := range start {
		if a.Data.Step.Worktree || isGitKind(a.Data.Step.Kind) || !e.policies.cached(a.Data.Policy) {
			continue
		}
		j, err := e.vet(ctxs[i], a.Data)
		tasks[i].verdict = &verdict{j, err}
	}
}

// launch starts an attempt recorded ahead (its record is durable).
func (e *Executor) launch(a core.Attempt, at time.Time) {
	ctx, cancel := context.WithCancelCause(e.runCtx)
	t := &task{cancel: cancel}
	e.lp.tasks[a.Key()] = t
	e.wg.Add(1)
	go e.attempt(ctx, a, at, t)
}

// errHalted is a start given up because the executor halted.
var errHalted = errors.New("executor: halted")

// attempt runs one recorded attempt — the one place a step's process is
// started from (runStep dispatches by kind). Its slot frees as soon as its
// process group is gone — before its result is reported — so that the
// next queued attempt starts while the result travels.
func (e *Executor) attempt(ctx context.Context, a core.Attempt, started time.Time, t *task) {
	defer e.wg.Done()
	fin := e.runStep(ctx, a.Run, a.Data, started, t)
	t.cancel(nil)
	k := a.Key()
	e.send(input{in: core.Exited{Key: k}}, true)
	// The reporter logs a failure, and halts the executor on a failed
	// sync; the attempt then stays unfinished and is reported interrupted
	// by the next start.
	_ = e.report.finished(fin, localstate.Attempt{Run: k.Run, Step: k.Step, Attempt: k.Attempt})
	// Only a drain waits for the last result. The loop publishes draining
	// before it takes the mailbox again: either it takes this input, or
	// this reads draining set and wakes it.
	e.send(input{in: core.Reported{Key: k}}, e.draining())
}
