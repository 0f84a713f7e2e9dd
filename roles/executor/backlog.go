package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/roles/executor/core"
	"github.com/nats-io/nats.go/jetstream"
)

// The backlog rule (core: nothing starts until what the consumer held
// when it (re)started has been read) needs two readings of the consumer,
// taken here: its position at Start (readBacklog, handed to the core as
// core.Begin), and a watcher that polls the consumer's info until nothing
// is pending and the loop has handled the last delivered sequence — which
// also covers messages deleted from the stream meanwhile, and the re-arms
// after a stall or a recreation, which do not count deliveries.
//
// Messages the previous incarnation received and never acknowledged are
// not in the backlog: the server delivers them again after AckWait. Their
// cancels, if any, were in the backlog and recorded the attempts dropped
// (localstate.MarkDropped), so they do not run when they come.

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
	return info.NumPending == 0 && e.snap.Load().Processed >= info.Delivered.Stream
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
	e.send(input{in: core.BacklogRead{Gen: gen}}, true)
}
