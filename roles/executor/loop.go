package executor

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
	"github.com/nats-io/nats.go/jetstream"
)

// The loop is the executor's state machine. The consume callback
// (receive) only appends each message to the inbox and wakes the loop, so
// it never waits: a cancel, an election or a drain behind assignments that
// wait for a slot is read at once. The loop alone handles messages, in
// delivery order, and alone starts attempts, in arrival order, as slots
// free; attempt goroutines tell it when a slot frees (poke).

// delivery is a message the loop holds unacknowledged: an assignment
// message whose attempts are queued, or the drain being honoured.
type delivery struct {
	m   jetstream.Msg
	seq uint64
	// open counts its attempts still queued (neither recorded started nor
	// dropped): the message is acknowledged when it reaches 0.
	open int
}

// queued is an accepted attempt waiting for a slot.
type queued struct {
	key string
	run string
	a   event.TaskAssignedData
	d   *delivery
	// gone is set once it left the queue (started or dropped); the queue
	// skips it.
	gone bool
	// recorded is when it was recorded started ahead of a free slot (see
	// startReady); cancelled says why a cancel came for it meanwhile.
	recorded  time.Time
	cancelled string
}

// loopState is the loop's own state: only the loop goroutine touches it
// (and Stop, once the loop has ended).
type loopState struct {
	queue []*queued // arrival order; entries that are gone are skipped
	n     int       // entries of queue not gone
	byKey map[string]*queued
	// held are the deliveries the loop holds unacknowledged, by stream
	// sequence: a redelivery of one of them is recognised and not acted on
	// twice, and InProgress keeps the server from redelivering them.
	held    map[uint64]*delivery
	drain   *delivery // the drain being honoured, until drained
	drained bool
	backlog backlog
	// ahead are the attempts recorded started ahead of a free slot, by
	// key: in a record being written (aheadBusy) or, once it is durable,
	// waiting in prepared (oldest first) for a slot. Their messages stay
	// unacknowledged until their processes start.
	ahead     map[string]*queued
	prepared  []*queued
	aheadBusy bool
	// alive is when the loop last finished a pass (see stallGap).
	alive time.Time
	// helpers are the loop's goroutines (backlog watchers, consumer
	// recreation); the loop waits for them before it ends.
	helpers sync.WaitGroup
	// passes counts the loop's passes (read by benchmarks once it ended).
	passes int
}

func (l *loopState) init() {
	l.queue, l.n = nil, 0
	l.byKey = map[string]*queued{}
	l.ahead, l.prepared, l.aheadBusy = map[string]*queued{}, nil, false
	l.held = map[uint64]*delivery{}
	l.drain, l.drained = nil, false
	l.backlog = backlog{}
}

func (l *loopState) enqueue(q *queued) {
	l.queue = append(l.queue, q)
	l.byKey[q.key] = q
	l.n++
}

// peek returns the first attempt of the queue not gone, or nil.
func (l *loopState) peek() *queued {
	for len(l.queue) > 0 && l.queue[0].gone {
		l.queue[0] = nil
		l.queue = l.queue[1:]
	}
	if len(l.queue) == 0 {
		return nil
	}
	return l.queue[0]
}

// remove takes q out of the queue.
func (l *loopState) remove(q *queued) {
	if q.gone {
		return
	}
	q.gone = true
	delete(l.byKey, q.key)
	l.n--
}

// settle counts one attempt of d as recorded or dropped and acknowledges
// d once none is left open.
func (l *loopState) settle(d *delivery) {
	d.open--
	if d.open == 0 {
		_ = d.m.Ack()
		delete(l.held, d.seq)
	}
}

// waiting is how many accepted attempts wait for a slot: queued, or
// recorded ahead.
func (l *loopState) waiting() int { return l.n + len(l.ahead) }

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
	e.mu.Lock()
	e.mu.inbox = append(e.mu.inbox, m)
	e.mu.Unlock()
	e.poke()
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
	if e.lp.backlog.armed {
		e.watchBacklog(e.lp.backlog.gen)
	}
	lastKeep := time.Now()
	e.lp.alive = lastKeep
	for {
		select {
		case <-e.loopCtx.Done():
			return
		case <-e.wake:
		case <-t.C:
		}
		if now := time.Now(); now.Sub(lastKeep) >= e.cfg.ackWait/3 {
			lastKeep = now
			for _, d := range e.lp.held {
				_ = d.m.InProgress()
			}
		}
		e.step()
		e.lp.passes++
	}
}

// step handles everything the inbox holds, then starts what may start.
func (e *Executor) step() {
	for {
		e.mu.Lock()
		msgs := e.mu.inbox
		e.mu.inbox = nil
		lost := e.mu.lost
		e.mu.lost = false
		caught := e.mu.caughtUp
		e.mu.Unlock()
		// The loop waits at most a tick between passes; a longer gap
		// (its own work aside) means the process was stopped or starved.
		if gap := time.Since(e.lp.alive); gap > stallGap && !e.halted() {
			e.stalls.Add(1)
			e.log.Warn("executor loop did not run for a while (process stopped or starved): reading the consumer's backlog before starting anything", "gap", gap.Round(time.Millisecond))
			e.lp.backlog.rearm()
			e.watchBacklog(e.lp.backlog.gen)
		}
		if caught > 0 && e.lp.backlog.caughtUp(caught) {
			e.log.Info("backlog read; starting attempts", "queued", e.lp.n)
		}
		if lost {
			e.recreate()
		}
		e.startsDone()
		for _, m := range msgs {
			if e.halted() {
				e.hold(m)
				continue
			}
			e.process(m)
		}
		e.lp.alive = time.Now()
		if len(msgs) == 0 {
			break
		}
	}
	e.startReady()
	e.checkDrained()
	if w := e.lp.waiting(); e.queued.Swap(int64(w)) > 0 && w == 0 {
		// Results lingering for company go out now: nothing waits for a
		// slot any more (see reporter.loop).
		e.report.kick()
	}
	e.lp.alive = time.Now()
}

// process acts on one delivered message.
func (e *Executor) process(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	seq := md.Sequence.Stream
	defer func() {
		if seq > e.processed.Load() {
			e.processed.Store(seq)
		}
		if e.lp.backlog.seen(seq, md.NumDelivered) {
			e.log.Info("backlog read; starting attempts", "queued", e.lp.n)
		}
	}()
	if d := e.lp.held[seq]; d != nil {
		d.m = m // delivered again while held: acknowledge through the newest delivery
		return
	}
	env, err := e.cfg.Verifier.Verify(m.Data(), m.Subject(), md.Timestamp)
	if err != nil {
		e.log.Warn("refused message", "subject", m.Subject(), "stream_seq", seq, "err", err)
		_ = m.Term()
		return
	}
	switch env.Type {
	case event.LeaderElected:
		if err := e.elected(env, seq); err != nil {
			e.log.Error("record leader election", "stream_seq", seq, "err", err)
			e.fatal(err)
			return // not acknowledged
		}
		_ = m.Ack()
	case event.NodeDrain:
		e.drainRequested(m, seq, env)
	case event.TaskAssigned, event.TaskCancel:
		// The epoch in force at this message's place in the stream: the
		// rule the ledger applies, whatever order the messages were
		// delivered in.
		fence, err := e.state.EpochAt(seq)
		if err != nil {
			e.log.Error("read leader epoch", "stream_seq", seq, "err", err)
			return // not acknowledged: redelivered after AckWait
		}
		if env.Type == event.TaskAssigned {
			e.assignments(m, seq, fence, env)
		} else {
			e.cancels(m, seq, fence, env)
		}
	default:
		_ = m.Ack()
	}
}

// accepted is how many attempts the executor holds: running and queued.
func (e *Executor) accepted() int {
	e.mu.Lock()
	n := len(e.mu.running)
	e.mu.Unlock()
	return n + e.lp.waiting()
}

// assignments queues the attempts of an assignment message carried at
// stream sequence seq, where the leader epoch in force was fence. The
// message stays unacknowledged until each of its attempts is recorded
// started or dropped. If the executor holds Capacity attempts already, the
// message is given back to the server (refused) and delivered again after
// refuseDelay; a message is taken whole, so one arriving when nothing is
// held is taken even if it carries more than Capacity attempts.
func (e *Executor) assignments(m jetstream.Msg, seq, fence uint64, env *envelope.Envelope) {
	d := &delivery{m: m, seq: seq}
	var take []*queued
	mine := map[string]bool{}
	for _, ev := range env.Events {
		q, err := e.admit(ev, seq, fence)
		if err != nil {
			e.log.Error("assignment", "run", ev.Run, "stream_seq", seq, "err", err)
			return // not acknowledged: redelivered after AckWait
		}
		if q == nil || mine[q.key] {
			continue
		}
		mine[q.key] = true
		q.d = d
		take = append(take, q)
	}
	if len(take) == 0 {
		_ = m.Ack()
		return
	}
	if held := e.accepted(); held > 0 && held+len(take) > e.Capacity() {
		e.refused.Add(1)
		e.log.Debug("no room for an assignment; delivered again later", "stream_seq", seq, "attempts", len(take),
			"held", held, "capacity", e.Capacity())
		_ = m.NakWithDelay(refuseDelay)
		return
	}
	for _, q := range take {
		e.lp.enqueue(q)
	}
	d.open = len(take)
	e.lp.held[seq] = d
}

// admit returns the attempt an assignment asks for, or nil if it is not
// this executor's to run: not for this node, a deposed leader's (epoch
// below fence), already queued or running, or recorded in the local state
// (taken before, or cancelled before it arrived).
func (e *Executor) admit(ev event.Event, seq, fence uint64) (*queued, error) {
	var a event.TaskAssignedData
	if err := ev.Decode(&a); err != nil {
		e.log.Warn("bad assignment", "stream_seq", seq, "err", err)
		return nil, nil
	}
	if a.Node != e.env.Node {
		return nil, nil
	}
	if a.FencedBy(fence) {
		e.fenced.Add(1)
		e.log.Warn("assignment from a deposed leader dropped", "run", ev.Run, "step", a.Step.ID, "attempt", a.Attempt,
			"epoch", a.Epoch, "current_epoch", fence, "stream_seq", seq, "signer", ev.Node)
		return nil, nil
	}
	key := attemptKey(ev.Run, a.Step.ID, a.Attempt)
	if e.lp.byKey[key] != nil || e.lp.ahead[key] != nil {
		return nil, nil
	}
	e.mu.Lock()
	_, running := e.mu.running[key]
	e.mu.Unlock()
	if running {
		return nil, nil
	}
	if a.Step.Kind != event.KindNoop {
		rec, seen, err := e.state.Lookup(ev.Run, a.Step.ID, a.Attempt)
		if errors.Is(err, localstate.ErrInvalid) {
			e.log.Warn("bad assignment", "stream_seq", seq, "err", err)
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if seen {
			e.log.Info("assignment already taken or cancelled; not running it", "run", ev.Run, "step", a.Step.ID,
				"attempt", a.Attempt, "state", rec.State)
			return nil, nil
		}
	}
	return &queued{key: key, run: ev.Run, a: a}, nil
}

// cancels acts on a task.cancel message: a running attempt is killed (its
// process group: SIGTERM, then SIGKILL) and reported cancelled; a queued
// one is dropped — recorded so, never started, reported cancelled; one
// this executor has not received is recorded dropped, so that its
// assignment, delivered later, never runs. A deposed leader's cancel is
// ignored. The message is acknowledged once the drops are recorded.
func (e *Executor) cancels(m jetstream.Msg, seq, fence uint64, env *envelope.Envelope) {
	var drops []*queued
	var reasons []string
	var unseen []localstate.Attempt
	for _, ev := range env.Events {
		var c event.TaskCancelData
		if err := ev.Decode(&c); err != nil || c.Node != e.env.Node {
			continue
		}
		if c.FencedBy(fence) {
			e.fenced.Add(1)
			e.log.Warn("cancel from a deposed leader dropped", "run", ev.Run, "step", c.Step, "attempt", c.Attempt,
				"epoch", c.Epoch, "current_epoch", fence, "stream_seq", seq, "signer", ev.Node)
			continue
		}
		key := attemptKey(ev.Run, c.Step, c.Attempt)
		e.mu.Lock()
		t := e.mu.running[key]
		if t != nil {
			t.operator = true
		}
		e.mu.Unlock()
		if t != nil {
			e.log.Info("cancelling attempt", "run", ev.Run, "step", c.Step, "attempt", c.Attempt, "code", c.Code, "reason", c.Reason)
			t.cancel()
			continue
		}
		if q := e.lp.byKey[key]; q != nil {
			drops = append(drops, q)
			reasons = append(reasons, cancelWhy(c))
			continue
		}
		if q := e.lp.ahead[key]; q != nil {
			// Recorded ahead: it never starts (see cancelAhead) — now
			// if its record is durable, else once it is (startsDone).
			if q.cancelled == "" {
				q.cancelled = cancelWhy(c)
				e.log.Info("attempt recorded ahead cancelled before it started", "run", q.run, "step", q.a.Step.ID, "attempt", q.a.Attempt, "reason", q.cancelled)
				if i := slices.Index(e.lp.prepared, q); i >= 0 {
					e.lp.prepared = slices.Delete(e.lp.prepared, i, i+1)
					e.cancelAhead(q)
				}
			}
			continue
		}
		_, seen, err := e.state.Lookup(ev.Run, c.Step, c.Attempt)
		if errors.Is(err, localstate.ErrInvalid) {
			continue
		}
		if err != nil {
			e.log.Error("cancel", "run", ev.Run, "stream_seq", seq, "err", err)
			return // not acknowledged: redelivered after AckWait
		}
		if !seen {
			unseen = append(unseen, localstate.Attempt{Run: ev.Run, Step: c.Step, Attempt: c.Attempt})
		}
	}
	recs := unseen
	for _, q := range drops {
		recs = append(recs, localstate.Attempt{Run: q.run, Step: q.a.Step.ID, Attempt: q.a.Attempt})
	}
	if len(recs) > 0 {
		if err := e.state.MarkDropped(recs...); err != nil {
			e.log.Error("record cancelled attempts", "attempts", len(recs), "stream_seq", seq, "err", err)
			e.fatal(err)
			return // not acknowledged
		}
	}
	for i, q := range drops {
		e.lp.remove(q)
		e.dropped.Add(1)
		e.log.Info("queued attempt cancelled before it started", "run", q.run, "step", q.a.Step.ID, "attempt", q.a.Attempt, "reason", reasons[i])
		e.report.note(e.cancelledBeforeStart(q, reasons[i]))
		e.lp.settle(q.d)
	}
	for _, a := range unseen {
		e.log.Info("cancel for an attempt not received; it will not run", "run", a.Run, "step", a.Step, "attempt", a.Attempt)
	}
	_ = m.Ack()
}

// cancelWhy is a cancel's reason for people.
func cancelWhy(c event.TaskCancelData) string {
	switch {
	case c.Code != "" && c.Reason != "":
		return c.Code + ": " + c.Reason
	case c.Code != "":
		return c.Code
	case c.Reason != "":
		return c.Reason
	}
	return "task.cancel"
}

// drainRequested honours a node.drain naming this node: from now on
// nothing more starts; once nothing runs the drain is complete (see
// checkDrained). The message stays unacknowledged until then, so that a
// drain interrupted by a restart is delivered again and honoured by the
// next incarnation; a drain that completed is acknowledged, and a node
// restarted after it serves again.
func (e *Executor) drainRequested(m jetstream.Msg, seq uint64, env *envelope.Envelope) {
	var reason string
	mine := false
	for _, ev := range env.Events {
		var d event.NodeDrainData
		if ev.Decode(&d) == nil && d.Node == e.env.Node {
			mine, reason = true, d.Reason
		}
	}
	if !mine || e.lp.drain != nil || e.lp.drained || seq <= e.drainedSeq {
		// Another node's, honoured already, or completed before and
		// delivered again by a consumer made again from an older position.
		_ = m.Ack()
		return
	}
	d := &delivery{m: m, seq: seq}
	e.lp.drain = d
	e.lp.held[seq] = d
	e.draining.Store(true)
	e.log.Info("drain requested: starting nothing more, finishing what runs", "reason", reason,
		"running", e.Stats().Running, "queued", e.lp.waiting())
}

// checkDrained completes a drain once no attempt is left — running or
// reporting its result: the drain is recorded completed (local state),
// its message acknowledged (waiting for the server's answer) and Drained
// is closed.
func (e *Executor) checkDrained() {
	if e.lp.drain == nil || e.lp.drained {
		return
	}
	e.mu.Lock()
	active := e.mu.active
	e.mu.Unlock()
	if active > 0 {
		return
	}
	d := e.lp.drain
	// Recorded before the acknowledgement: a delivery of it again is
	// recognised even if the acknowledgement is lost with the consumer.
	if err := e.state.MarkDrained(d.seq); err != nil {
		e.log.Error("record the drain completed", "stream_seq", d.seq, "err", err)
		e.fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.loopCtx, 5*time.Second)
	err := d.m.DoubleAck(ctx)
	cancel()
	if err != nil {
		e.log.Warn("acknowledge the drain request", "stream_seq", d.seq, "err", err)
	}
	delete(e.lp.held, d.seq)
	e.lp.drain, e.lp.drained = nil, true
	e.log.Info("drained: nothing runs and nothing more starts; the node may stop", "queued_unstarted", e.lp.waiting())
	close(e.drained)
}

// startReady starts queued attempts in arrival order while slots are
// free — unless the executor halted, drains, or has not read its backlog
// yet. A noop at the head of the queue runs at once (it takes no slot).
func (e *Executor) startReady() {
	if e.halted() || e.lp.drain != nil || e.lp.drained || e.lp.backlog.armed || e.paused() {
		return
	}
	e.mu.Lock()
	free := e.cfg.Slots - len(e.mu.running)
	e.mu.Unlock()
	// Attempts recorded ahead were the queue's head: they go first, with
	// no record to wait for.
	for free > 0 && len(e.lp.prepared) > 0 {
		q := e.lp.prepared[0]
		e.lp.prepared[0] = nil
		e.lp.prepared = e.lp.prepared[1:]
		e.startPrepared(q)
		free--
	}
	// Once at most half the slots' worth is left recorded ahead, the next
	// attempts are recorded up to Slots ahead — in the same commit as
	// those that start now, or on their own while every slot is busy —
	// so that under load one fsync records several starts, off the path
	// of a freed slot.
	room := 0
	if p := len(e.lp.prepared); !e.lp.aheadBusy && p <= e.cfg.Slots/2 {
		room = e.cfg.Slots - p
	}
	var group, ahead, noops []*queued
	for q := e.lp.peek(); q != nil; q = e.lp.peek() {
		switch {
		case q.a.Step.Kind == event.KindNoop:
			e.lp.remove(q)
			noops = append(noops, q)
			continue
		case free > 0 && !e.lp.aheadBusy:
			// (While a record ahead is written, its attempts start
			// first: a free slot waits for it.)
			e.lp.remove(q)
			free--
			group = append(group, q)
			continue
		case room > 0:
			e.lp.remove(q)
			room--
			ahead = append(ahead, q)
			e.lp.ahead[q.key] = q
			continue
		}
		break
	}
	e.runNoops(noops)
	e.startGroup(group, ahead)
}

// startPrepared starts an attempt recorded ahead (its record is durable)
// on a slot, and acknowledges its message once the message's last
// attempt started.
func (e *Executor) startPrepared(q *queued) {
	delete(e.lp.ahead, q.key)
	ctx, cancel := context.WithCancel(e.runCtx)
	t := &task{cancel: cancel}
	e.mu.Lock()
	e.mu.running[q.key] = t
	e.mu.active++
	e.mu.Unlock()
	e.lp.settle(q.d)
	e.wg.Add(1)
	go e.attempt(ctx, q, q.recorded, t)
}

// cancelAhead reports an attempt recorded ahead and cancelled before it
// started as cancelled, and records it finished: its record says it may
// have started, so it is answered rather than forgotten.
func (e *Executor) cancelAhead(q *queued) {
	delete(e.lp.ahead, q.key)
	e.dropped.Add(1)
	e.lp.settle(q.d)
	d := e.cancelledBeforeStart(q, q.cancelled)
	e.mu.Lock()
	e.mu.active++
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		_ = e.report.finished(d, localstate.Attempt{Run: q.run, Step: q.a.Step.ID, Attempt: q.a.Attempt})
		e.mu.Lock()
		e.mu.active--
		e.mu.Unlock()
		e.poke() // a drain may wait for it
	}()
}

// cancelledBeforeStart is the task.finished of an attempt cancelled
// before its process started, for the reason why.
func (e *Executor) cancelledBeforeStart(q *queued, why string) event.Draft {
	return event.MustDraft(event.TaskFinished, q.run, event.TaskFinishedData{
		Step: q.a.Step.ID, Attempt: q.a.Attempt, Node: e.env.Node,
		Status: event.TaskCancelled, Class: event.ClassTransient, ExitCode: -1,
		Error:       "cancelled before it started (" + why + ")",
		CommandHash: CommandHash(q.a.Step.Run),
	})
}

// forgetAhead deletes the records of the attempts recorded ahead that did
// not start, so that their assignments, delivered again to the next
// start, run then (Stop calls it before it gives their messages back).
// Should it fail, the next start reports them interrupted.
func (e *Executor) forgetAhead() {
	if len(e.lp.prepared) == 0 {
		return
	}
	recs := make([]localstate.Attempt, 0, len(e.lp.prepared))
	for _, q := range e.lp.prepared {
		delete(e.lp.ahead, q.key)
		recs = append(recs, localstate.Attempt{Run: q.run, Step: q.a.Step.ID, Attempt: q.a.Attempt})
	}
	e.lp.prepared = nil
	if len(recs) == 0 {
		return
	}
	if err := e.state.Forget(recs...); err != nil {
		e.log.Warn("forget attempts recorded ahead; the next start reports them interrupted", "attempts", len(recs), "err", err)
	}
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
func (e *Executor) runNoops(noops []*queued) {
	if len(noops) == 0 {
		return
	}
	var starts, results []event.Draft
	for _, q := range noops {
		d := e.noop(q.run, q.a)
		starts, results = append(starts, d[0]), append(results, d[1])
	}
	if err := e.env.Emit.Emit(e.runCtx, append(starts, results...)...); err != nil {
		// Their messages stay unacknowledged (given back at Stop).
		e.log.Error("emit noop results", "steps", len(noops), "err", err)
		return
	}
	for _, q := range noops {
		e.lp.settle(q.d)
	}
}

// noop runs a noop step at once and returns its started and finished
// events.
func (e *Executor) noop(run string, a event.TaskAssignedData) []event.Draft {
	return noopDrafts(e.runCtx, e.env.Node, e.cfg.Runner, run, a)
}

// startGroup takes a slot for each attempt of group and hands the group,
// and the attempts to record ahead of a free slot (ahead), to a starter
// goroutine, which records them all started — one synced commit, shared
// with concurrent records (so the loop never waits for an fsync) — and
// then starts each attempt of group on its own goroutine (the last on the
// starter's own). The loop acknowledges group's messages once it learns
// the records are durable (startsDone, at its next pass, within a tick),
// and keeps ahead's, recorded, for the slots that free next (prepared):
// under load one fsync records the starts of up to twice the slots. If
// the record fails, none of them starts and the slots free; on a failed
// sync the executor halts and their messages stay unacknowledged for the
// next start. A cancel that comes while the record is written cancels the
// attempt before its process starts.
func (e *Executor) startGroup(group, ahead []*queued) {
	if len(group)+len(ahead) == 0 {
		return
	}
	if len(ahead) > 0 {
		e.lp.aheadBusy = true
	}
	now := time.Now().UTC()
	recs := make([]localstate.Attempt, 0, len(group)+len(ahead))
	tasks := make([]*task, len(group))
	ctxs := make([]context.Context, len(group))
	e.mu.Lock()
	for i, q := range group {
		recs = append(recs, localstate.Attempt{Run: q.run, Step: q.a.Step.ID, Attempt: q.a.Attempt, State: localstate.StateStarted, Started: now})
		ctx, cancel := context.WithCancel(e.runCtx)
		ctxs[i], tasks[i] = ctx, &task{cancel: cancel}
		e.mu.running[q.key] = tasks[i]
		e.mu.active++
	}
	e.mu.Unlock()
	for _, q := range ahead {
		q.recorded = now
		recs = append(recs, localstate.Attempt{Run: q.run, Step: q.a.Step.ID, Attempt: q.a.Attempt, State: localstate.StateStarted, Started: now})
	}
	e.starting.Add(1)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		err := errHalted
		if !e.halted() { // Stop began: start nothing more
			err = e.state.MarkStarted(recs...)
		}
		if err != nil {
			if err != errHalted {
				e.log.Error("record attempts started", "attempts", len(recs), "err", err)
				e.fatal(err)
			}
			e.mu.Lock()
			for i, q := range group {
				delete(e.mu.running, q.key)
				e.mu.active--
				tasks[i].cancel()
			}
			e.mu.Unlock()
		} else {
			// The last attempt runs on this goroutine, below.
			for i := range len(group) - 1 {
				e.wg.Add(1)
				go e.attempt(ctxs[i], group[i], now, tasks[i])
			}
		}
		e.mu.Lock()
		e.mu.starts = append(e.mu.starts, startResult{group: group, ahead: ahead, err: err})
		e.mu.Unlock()
		if err != nil || len(ahead) > 0 {
			// Their slots are free again, or attempts wait recorded for
			// the next slot.
			e.poke()
		}
		// Recorded: the loop acknowledges the messages at its next pass —
		// woken by a message, a slot freeing or its tick — not worth a
		// wake-up of its own.
		e.starting.Done()
		if err == nil && len(group) > 0 {
			last := len(group) - 1
			e.wg.Add(1)
			e.attempt(ctxs[last], group[last], now, tasks[last])
		}
	}()
}

// errHalted is a start given up because the executor halted.
var errHalted = errors.New("executor: halted")

// startResult is what a starter did with its group.
type startResult struct {
	group []*queued
	ahead []*queued // recorded ahead of a free slot
	err   error     // nil: recorded (and group started)
}

// startsDone settles the groups the starters are done with: the messages
// of recorded attempts are acknowledged once complete, and the attempts
// recorded ahead wait for a slot (prepared); a group refused by the local
// state for another reason than a failed sync (or the halt) is queued
// again, first.
func (e *Executor) startsDone() {
	e.mu.Lock()
	rs := e.mu.starts
	e.mu.starts = nil
	e.mu.Unlock()
	for _, r := range rs {
		if len(r.ahead) > 0 {
			e.lp.aheadBusy = false
		}
		switch {
		case r.err == nil:
			for _, q := range r.group {
				e.lp.settle(q.d)
			}
			for _, q := range r.ahead {
				if q.cancelled != "" {
					e.cancelAhead(q)
					continue
				}
				e.lp.prepared = append(e.lp.prepared, q)
			}
		case errors.Is(r.err, errHalted) || errors.Is(r.err, localstate.ErrSync) || e.halted():
			// Their messages stay unacknowledged, for the next start.
			for _, q := range r.ahead {
				delete(e.lp.ahead, q.key)
			}
		default:
			again := append(r.group, r.ahead...)
			for _, q := range again {
				delete(e.lp.ahead, q.key)
				q.gone, q.cancelled = false, ""
				e.lp.byKey[q.key] = q
				e.lp.n++
			}
			e.lp.queue = append(again, e.lp.queue...)
		}
	}
}

// attempt runs one recorded attempt. Its slot frees as soon as its process
// group is gone — before its result is reported — so that the next queued
// attempt starts while the result travels.
func (e *Executor) attempt(ctx context.Context, q *queued, started time.Time, t *task) {
	defer e.wg.Done()
	fin := e.runStep(ctx, q.run, q.a, started, t)
	t.cancel()
	e.mu.Lock()
	delete(e.mu.running, q.key)
	e.mu.Unlock()
	e.poke()
	// The reporter logs a failure, and halts the executor on a failed
	// sync; the attempt then stays unfinished and is reported interrupted
	// by the next start.
	_ = e.report.finished(fin, localstate.Attempt{Run: q.run, Step: q.a.Step.ID, Attempt: q.a.Attempt})
	e.mu.Lock()
	e.mu.active--
	e.mu.Unlock()
	// Only a drain waits for the last result (checkDrained). The loop sets
	// draining before it reads active: either it sees this decrement, or
	// this reads draining set and wakes it.
	if e.draining.Load() {
		e.poke()
	}
}

func attemptKey(run, step string, attempt int) string {
	return run + "/" + step + "/" + strconv.Itoa(attempt)
}
