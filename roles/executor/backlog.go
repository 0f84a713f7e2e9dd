package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// backlog is the rule that the executor starts nothing until it has read
// what its consumer held when it (re)started: a node back after being
// declared dead finds, behind an assignment it never started, the cancel
// that superseded it — and must read that cancel before starting the
// attempt. The rule is armed at Start, when the consumer is recreated,
// and when the loop notices it did not run for stallGap (the process was
// stopped, as by kill -STOP, and its pending messages may hold cancels).
//
// Its end is seen two ways. At Start the consumer's info gives the
// messages not yet delivered (NumPending) after its delivered stream
// sequence; first deliveries above that sequence come in stream order, so
// the backlog is read once that many have been handled. A watcher also
// polls the consumer's info until nothing is pending and the loop has
// handled the last delivered sequence — which also covers messages
// deleted from the stream meanwhile, and the re-arms, which do not count.
//
// Messages the previous incarnation received and never acknowledged are
// not in the backlog: the server delivers them again after AckWait. Their
// cancels, if any, were in the backlog and recorded the attempts dropped
// (localstate.MarkDropped), so they do not run when they come.
type backlog struct {
	armed bool
	// gen numbers the arms; a watcher reports the one it watched.
	gen int
	// after is the consumer's delivered stream sequence when armed; left
	// the first deliveries above it still to handle (< 0: not counted, the
	// watcher decides).
	after uint64
	left  int64
}

// backlogMark is a consumer's position.
type backlogMark struct {
	delivered uint64 // last stream sequence delivered
	pending   uint64 // messages not yet delivered
}

// readBacklog reads cons's position.
func readBacklog(ctx context.Context, cons jetstream.Consumer) (backlogMark, error) {
	info, err := cons.Info(ctx)
	if err != nil {
		return backlogMark{}, fmt.Errorf("executor: consumer info: %w", err)
	}
	return backlogMark{delivered: info.Delivered.Stream, pending: info.NumPending}, nil
}

// arm starts the rule for the backlog m describes (nothing if it is empty).
func (b *backlog) arm(m backlogMark) {
	b.gen++
	b.armed, b.after, b.left = m.pending > 0, m.delivered, int64(m.pending)
}

// rearm starts the rule with the backlog left to the watcher.
func (b *backlog) rearm() {
	b.gen++
	b.armed, b.left = true, -1
}

// seen counts a handled delivery of stream sequence seq (its numDelivered
// delivery) and reports whether it completed the backlog.
func (b *backlog) seen(seq, numDelivered uint64) bool {
	if !b.armed || b.left < 0 || seq <= b.after || numDelivered != 1 {
		return false
	}
	b.left--
	if b.left > 0 {
		return false
	}
	b.armed = false
	return true
}

// caughtUp ends the rule if gen is the current arm, and reports whether it
// did.
func (b *backlog) caughtUp(gen int) bool {
	if !b.armed || gen != b.gen {
		return false
	}
	b.armed = false
	return true
}

// backlogPoll is how often a watcher reads the consumer's info.
const backlogPoll = 100 * time.Millisecond

// watchBacklog starts a watcher of arm gen: it polls the consumer's info
// until nothing is pending and the loop has handled the last delivered
// sequence, then tells the loop.
func (e *Executor) watchBacklog(gen int) {
	e.lp.helpers.Add(1)
	go func() {
		defer e.lp.helpers.Done()
		e.awaitBacklog(gen)
	}()
}

// backlogRead reports whether the consumer has nothing pending and the
// loop has handled everything it delivered.
func (e *Executor) backlogRead() bool {
	e.mu.Lock()
	cons := e.mu.cons
	e.mu.Unlock()
	if cons == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(e.loopCtx, 5*time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return false
	}
	return info.NumPending == 0 && e.processed.Load() >= info.Delivered.Stream
}

// recreate makes the consumer again after it was deleted under the
// executor, from the stream sequence after the last one handled, and arms
// the backlog rule for it. It runs on a helper goroutine, retrying until
// it succeeds or the executor stops.
func (e *Executor) recreate() {
	if e.halted() || !e.recreating.CompareAndSwap(false, true) {
		return
	}
	e.lp.backlog.rearm()
	gen := e.lp.backlog.gen
	from := e.processed.Load() + 1
	e.mu.Lock()
	e.mu.cons = nil
	e.mu.Unlock()
	e.lp.helpers.Add(1)
	go func() {
		defer e.lp.helpers.Done()
		defer e.recreating.Store(false)
		pause := 100 * time.Millisecond
		for {
			err := e.resubscribe(from)
			if err == nil {
				break
			}
			e.log.Warn("recreate the executor consumer", "from_stream_seq", from, "err", err)
			t := time.NewTimer(pause)
			select {
			case <-e.loopCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			pause = min(2*pause, 5*time.Second)
		}
		e.log.Info("executor consumer recreated", "from_stream_seq", from)
		e.awaitBacklog(gen)
	}()
}

// awaitBacklog polls until the backlog is read (see backlogRead), then
// tells the loop that arm gen is complete.
func (e *Executor) awaitBacklog(gen int) {
	t := time.NewTicker(backlogPoll)
	defer t.Stop()
	for !e.backlogRead() {
		select {
		case <-e.loopCtx.Done():
			return
		case <-t.C:
		}
	}
	e.mu.Lock()
	e.mu.caughtUp = max(e.mu.caughtUp, gen)
	e.mu.Unlock()
	e.poke()
}

// resubscribe creates the consumer delivering from stream sequence from
// (or takes the one that exists) and consumes it.
func (e *Executor) resubscribe(from uint64) error {
	ctx, cancel := context.WithTimeout(e.loopCtx, 10*time.Second)
	defer cancel()
	cfg := e.consumerConfig()
	cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	cons, err := e.cfg.JS.CreateOrUpdateConsumer(ctx, bus.EventsStream, cfg)
	if err != nil {
		// Made meanwhile with another start: take it as it is.
		var err2 error
		if cons, err2 = e.cfg.JS.Consumer(ctx, bus.EventsStream, ConsumerName(e.env.Node)); err2 != nil {
			return fmt.Errorf("executor: consumer: %w", err)
		}
	}
	cc, err := cons.Consume(e.receive, jetstream.PullMaxMessages(prefetch), jetstream.ConsumeErrHandler(e.consumeErr))
	if err != nil {
		return fmt.Errorf("executor: consume: %w", err)
	}
	e.mu.Lock()
	if e.halted() {
		e.mu.Unlock()
		cc.Stop()
		<-cc.Closed()
		return nil
	}
	e.mu.cons, e.mu.consume = cons, cc
	e.mu.Unlock()
	return nil
}
