package executor

import (
	"context"
	"fmt"
	"time"

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
	ackFloor  uint64 // last stream sequence below which all is acknowledged
}

// readBacklog reads cons's position.
func readBacklog(ctx context.Context, cons jetstream.Consumer) (backlogMark, error) {
	info, err := cons.Info(ctx)
	if err != nil {
		return backlogMark{}, fmt.Errorf("executor: consumer info: %w", err)
	}
	return backlogMark{delivered: info.Delivered.Stream, pending: info.NumPending, ackFloor: info.AckFloor.Stream}, nil
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
