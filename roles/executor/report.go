package executor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
)

// reporter emits the task.started and task.finished events of shell steps
// in groups, and records the reported attempts finished in the local state
// — one outbox write and one local commit per group rather than per step.
//
// Its loop takes everything queued (what arrived while the previous group
// was being written) and emits it in one Emit: every task.started first,
// then every task.finished. A step queues its started before its finished,
// so each step's started still precedes its finished, and the outbox packs
// each type's run into one signed message. Then it marks the group's
// finished attempts in one commit (localstate.MarkFinishedAll) and only
// then answers their steps: a result is durable in the outbox before its
// attempt is recorded finished, as before grouping.
type reporter struct {
	emit  roles.Emitter
	state *localstate.Store
	log   *slog.Logger
	// fatal is the executor's reaction to an error of the local state.
	fatal func(error) bool

	mu struct {
		sync.Mutex
		pending []report
		// finishes counts the task.finished in pending.
		finishes int
	}
	wake chan struct{} // capacity 1: something is queued
	quit chan struct{} // closed by stop
	done chan struct{} // closed when the loop returned
}

// report is one queued draft. A task.finished carries the attempt to mark
// finished and the channel its step waits on.
type report struct {
	draft   event.Draft
	attempt localstate.Attempt
	result  chan error // nil for task.started: nobody waits for it
}

func newReporter(emit roles.Emitter, state *localstate.Store, log *slog.Logger, fatal func(error) bool) *reporter {
	r := &reporter{emit: emit, state: state, log: log, fatal: fatal,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// started queues a task.started draft and returns at once.
func (r *reporter) started(d event.Draft) {
	r.queue(report{draft: d})
}

// note queues a draft nobody waits for and no attempt record follows (the
// task.finished of an attempt dropped before it started) and returns at
// once. It goes out with the next group, among the task.started.
func (r *reporter) note(d event.Draft) {
	r.queue(report{draft: d})
}

// finished queues a task.finished draft of attempt a and waits until it is
// in the outbox (synced) and a is recorded finished. The error is the
// Emit's or the local state's.
func (r *reporter) finished(d event.Draft, a localstate.Attempt) error {
	ch := make(chan error, 1)
	r.queue(report{draft: d, attempt: a, result: ch})
	return <-ch
}

func (r *reporter) queue(rep report) {
	r.mu.Lock()
	r.mu.pending = append(r.mu.pending, rep)
	if rep.result != nil {
		r.mu.finishes++
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// stop writes what is queued and ends the loop. Call it once no step runs
// (nothing is queued after it).
func (r *reporter) stop() {
	close(r.quit)
	<-r.done
}

func (r *reporter) loop() {
	defer close(r.done)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	armed := false
	for {
		select {
		case <-r.wake:
			if r.urgent() {
				r.flush()
			} else if !armed {
				linger.Reset(startedLinger)
				armed = true
			}
		case <-linger.C:
			armed = false
			r.flush()
		case <-r.quit:
			r.flush()
			return
		}
	}
}

// startedLinger is how long a task.started may wait for company.
const startedLinger = 20 * time.Millisecond

// urgent reports whether a task.finished is queued.
func (r *reporter) urgent() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.finishes > 0
}

// flush emits every queued draft in one Emit, marks the finished attempts
// in one commit and answers their steps.
func (r *reporter) flush() {
	r.mu.Lock()
	reps := r.mu.pending
	r.mu.pending = nil
	r.mu.finishes = 0
	r.mu.Unlock()
	if len(reps) == 0 {
		return
	}
	drafts := make([]event.Draft, 0, len(reps))
	var fins []report
	for _, rep := range reps {
		if rep.result == nil {
			drafts = append(drafts, rep.draft)
		} else {
			fins = append(fins, rep)
		}
	}
	attempts := make([]localstate.Attempt, len(fins))
	for i, rep := range fins {
		drafts = append(drafts, rep.draft)
		attempts[i] = rep.attempt
	}
	// Report even after Stop began: the outbox outlives the role.
	err := r.emit.Emit(context.Background(), drafts...)
	if err != nil {
		err = fmt.Errorf("executor: emit %d task events: %w", len(drafts), err)
		r.log.Error("emit task events", "events", len(drafts), "err", err)
	} else if len(attempts) > 0 {
		if err = r.state.MarkFinishedAll(attempts...); err != nil {
			err = fmt.Errorf("executor: mark %d attempts finished: %w", len(attempts), err)
			r.log.Error("mark finished", "attempts", len(attempts), "err", err)
			r.fatal(err)
		}
	}
	for _, rep := range fins {
		rep.result <- err
	}
}
