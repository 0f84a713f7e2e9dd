package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/roles/executor/core"
	"github.com/nats-io/nats.go/jetstream"
)

// The durable consumer's repair. The executor keeps, in its local state, a
// position: a stream sequence below which every message of its consumer
// has been acknowledged — the consumer's ack floor as the server reports
// it, read every positionPoll. The same read notices a consumer deleted
// under the executor (as do the consume errors). A missing consumer — at
// Start, or while running — is made again delivering from that position,
// never from "new": what was delivered after it is delivered again and
// recognised (an attempt recorded in the local state never runs twice, a
// message held is matched by its stream sequence, a completed drain is
// recorded), and what arrived while the consumer was missing is not lost.

// positionPoll is how often the executor reads its consumer's ack floor,
// records it as its position, and so notices a consumer gone missing.
const positionPoll = time.Second

// Checks are the executor's readiness checks: "consumer", which fails
// while the durable consumer is missing and passes again once it was made
// again and delivers (a fault healed before the monitor looked is still
// reported once, so its alarm is raised and cleared).
func (e *Executor) Checks() []health.Check {
	return []health.Check{{
		Name:     health.CheckConsumer,
		Blocking: true,
		Alarm:    event.AlarmConsumerMissing,
		Probe:    e.consumerHealth.Probe,
		Changed:  e.consumerHealth.Changed,
	}}
}

// missing records, for the consumer check and the log, that the durable
// consumer was found missing and is made again from stream sequence from.
func (e *Executor) missing(from uint64, cause error) {
	since := time.Now().UTC().Format(time.RFC3339)
	err := fmt.Errorf("durable consumer %s missing since %s; recreating from stream seq %d", ConsumerName(e.env.Node), since, from)
	e.consumerHealth.Set(err)
	args := []any{"consumer", ConsumerName(e.env.Node), "from_stream_seq", from}
	if cause != nil {
		args = append(args, "cause", cause)
	}
	e.log.Warn("executor consumer missing; recreating it", args...)
}

// startConfig is the consumer config Start makes or updates: an existing
// consumer keeps its start (it cannot change); a missing one delivers from
// the recorded position — the first start of an executor, with none
// recorded, delivers new messages only. It reports the position a missing
// consumer is made from, 0 if it exists or none was recorded.
func (e *Executor) startConfig(ctx context.Context) (jetstream.ConsumerConfig, uint64, error) {
	cfg := e.consumerConfig()
	pos, known, err := e.state.Position()
	if err != nil {
		return cfg, 0, fmt.Errorf("executor: read consumer position: %w", err)
	}
	cur, lookErr := e.cfg.JS.Consumer(ctx, bus.EventsStream, cfg.Durable)
	switch {
	case lookErr == nil:
		ci := cur.CachedInfo().Config
		cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = ci.DeliverPolicy, ci.OptStartSeq, ci.OptStartTime
		return cfg, 0, nil
	case !errors.Is(lookErr, jetstream.ErrConsumerNotFound):
		return cfg, 0, fmt.Errorf("executor: consumer %s: %w", cfg.Durable, lookErr)
	case !known:
		return cfg, 0, nil
	}
	from, err := e.resumeAt(ctx, pos)
	if err != nil {
		return cfg, 0, err
	}
	e.missing(from, lookErr)
	cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	return cfg, from, nil
}

// resumeAt is the stream sequence a consumer made again from position pos
// starts at: pos, unless the stream ends before it — it was deleted and
// made again, its sequences starting over — when every message it holds
// is new to the executor: its first.
func (e *Executor) resumeAt(ctx context.Context, pos uint64) (uint64, error) {
	st, err := e.cfg.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		return 0, fmt.Errorf("executor: stream %s: %w", bus.EventsStream, err)
	}
	s := st.CachedInfo().State
	if pos <= s.LastSeq+1 {
		return max(pos, 1), nil
	}
	e.log.Warn("the events stream ends before the executor's recorded position: it was made again; delivering all it holds",
		"position", pos, "stream_last_seq", s.LastSeq, "stream_first_seq", s.FirstSeq)
	return max(s.FirstSeq, 1), nil
}

// notePosition records pos — the consumer's ack floor + 1 — as the
// executor's position when it moved.
func (e *Executor) notePosition(pos uint64) {
	if pos == e.position.Load() || e.halted() {
		return
	}
	if err := e.state.SetPosition(pos); err != nil {
		e.log.Error("record the consumer position", "position", pos, "err", err)
		e.fatal(err)
		return
	}
	e.position.Store(pos)
}

// watchConsumer is a loop helper: every positionPoll, or at once when a
// consume error asks for it, it reads the consumer's info, records its
// ack floor, and tells the loop if the consumer is gone.
func (e *Executor) watchConsumer() {
	t := time.NewTicker(positionPoll)
	defer t.Stop()
	for {
		select {
		case <-e.loopCtx.Done():
			return
		case <-t.C:
		case <-e.probe:
		}
		e.mu.Lock()
		cons, lost := e.mu.cons, e.mu.lost
		e.mu.Unlock()
		if cons == nil || lost || e.halted() {
			continue // being made again, or nothing to watch
		}
		ctx, cancel := context.WithTimeout(e.loopCtx, 5*time.Second)
		info, err := cons.Info(ctx)
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			e.lose(err)
		case err != nil:
			e.log.Debug("executor consumer info", "err", err)
		default:
			e.notePosition(info.AckFloor.Stream + 1)
		}
	}
}

// lose tells the loop that the consumer is gone: it makes it again.
func (e *Executor) lose(err error) {
	e.mu.Lock()
	already := e.mu.lost || e.mu.cons == nil
	e.mu.lost = true
	e.mu.Unlock()
	if !already {
		e.log.Info("executor consumer gone", "err", err)
	}
	e.poke()
}

// probeConsumer asks the watcher to look at the consumer now.
func (e *Executor) probeConsumer() {
	select {
	case e.probe <- struct{}{}:
	default:
	}
}

// recreate makes the consumer again after it was lost, from the recorded
// position; the core armed the backlog rule for it (arm gen). It runs on a
// helper goroutine, retrying until it succeeds or the executor stops, and
// answers core.Recreated.
func (e *Executor) recreate(gen int) {
	pos := e.position.Load()
	if pos == 0 { // never read: the newest handled is the best bound known
		pos = e.core.Snapshot().Processed + 1
	}
	e.mu.Lock()
	old := e.mu.consume
	e.mu.cons, e.mu.consume = nil, nil
	e.mu.Unlock()
	e.missing(pos, nil)
	e.lp.helpers.Add(1)
	go func() {
		defer e.lp.helpers.Done()
		defer e.send(input{in: core.Recreated{}}, false)
		if old != nil { // it may still pull, and would read the new consumer
			old.Stop()
			<-old.Closed()
		}
		pause := 100 * time.Millisecond
		for {
			from, err := e.resubscribe(pos)
			if err == nil {
				e.log.Info("executor consumer recreated", "from_stream_seq", from)
				break
			}
			e.log.Warn("recreate the executor consumer", "position", pos, "err", err)
			t := time.NewTimer(pause)
			select {
			case <-e.loopCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			pause = min(2*pause, 5*time.Second)
		}
		e.awaitBacklog(gen)
	}()
}

// resubscribe makes the consumer delivering from position pos (see
// resumeAt), or takes the one that exists, and consumes it; it returns
// the stream sequence it delivers from.
func (e *Executor) resubscribe(pos uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(e.loopCtx, 10*time.Second)
	defer cancel()
	from, err := e.resumeAt(ctx, pos)
	if err != nil {
		return 0, err
	}
	cfg := e.consumerConfig()
	cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	cons, err := e.createFresh(ctx, cfg)
	if err != nil {
		// Made meanwhile with another start: take it as it is.
		var err2 error
		if cons, err2 = e.cfg.JS.Consumer(ctx, bus.EventsStream, ConsumerName(e.env.Node)); err2 != nil {
			return 0, fmt.Errorf("executor: consumer: %w", err)
		}
	}
	cc, err := cons.Consume(e.receive, e.consumeOpts()...)
	if err != nil {
		return 0, fmt.Errorf("executor: consume: %w", err)
	}
	e.mu.Lock()
	if e.halted() {
		e.mu.Unlock()
		cc.Stop()
		<-cc.Closed()
		return from, nil
	}
	e.mu.cons, e.mu.consume, e.mu.lost = cons, cc, false
	e.mu.Unlock()
	if from != pos { // the stream was made again: a lower position
		e.position.Store(0)
	}
	e.notePosition(from)
	e.consumerHealth.Set(nil)
	e.probeConsumer()
	return from, nil
}

// freshTries bounds how often createFresh makes a consumer again that came
// back with a deleted one's state.
const freshTries = 5

// createFresh makes the consumer cfg describes, which must not exist, and
// checks that it is fresh: nothing delivered yet. A durable consumer made
// again at once after its deletion can come back carrying the deleted
// one's state (its last flush landing after the deletion), with messages
// "delivered" to nobody, which the server would give again only after
// AckWait: such a consumer is deleted and made again.
func (e *Executor) createFresh(ctx context.Context, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	for try := 1; ; try++ {
		cons, err := e.cfg.JS.CreateOrUpdateConsumer(ctx, bus.EventsStream, cfg)
		if err != nil {
			return nil, err
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("executor: consumer info: %w", err)
		}
		if info.Delivered.Consumer == 0 || try == freshTries {
			if info.Delivered.Consumer > 0 {
				e.log.Warn("executor consumer made again carries a deleted one's state; its unacknowledged messages come after AckWait",
					"delivered_stream_seq", info.Delivered.Stream, "ack_pending", info.NumAckPending, "ack_wait", cfg.AckWait)
			}
			return cons, nil
		}
		e.log.Info("executor consumer made again carries a deleted one's state; making it again",
			"delivered_stream_seq", info.Delivered.Stream, "ack_pending", info.NumAckPending)
		if err := e.cfg.JS.DeleteConsumer(ctx, bus.EventsStream, cfg.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("executor: delete the stale consumer: %w", err)
		}
	}
}
