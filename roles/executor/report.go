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
	// busy reports whether the executor holds attempts that wait for a
	// slot: then a task.finished may wait for company (see loop).
	busy func() bool
	// linger is how long a task.finished may wait for company while busy
	// (finishedLinger; tests lengthen it).
	linger time.Duration

	mu struct {
		sync.Mutex
		pending []report
		// finishes counts the task.finished in pending.
		finishes int
		// since is when pending last became non-empty; company is armed
		// then, for startedLinger, unless a task.finished came first: a
		// task.started does not wake the loop, company does if nothing
		// else has by then.
		since   time.Time
		company *time.Timer
	}
	wake chan struct{} // capacity 1: something is queued
	// wakes counts the loop's wake-ups (read by benchmarks once it ended).
	wakes int
	quit  chan struct{} // closed by stop
	done  chan struct{} // closed when the loop returned
}

// report is one queued draft. A task.finished carries the attempt to mark
// finished and the channel its step waits on.
type report struct {
	draft   event.Draft
	attempt localstate.Attempt
	result  chan error // nil for task.started: nobody waits for it
}

func newReporter(emit roles.Emitter, state *localstate.Store, log *slog.Logger, fatal func(error) bool, busy func() bool) *reporter {
	r := &reporter{emit: emit, state: state, log: log, fatal: fatal, busy: busy, linger: finishedLinger,
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
	first := len(r.mu.pending) == 0
	r.mu.pending = append(r.mu.pending, rep)
	if first {
		r.mu.since = time.Now()
	}
	if rep.result == nil {
		// It may wait startedLinger for company: most often a task.finished
		// comes first and wakes the loop.
		if first {
			if r.mu.company == nil {
				r.mu.company = time.AfterFunc(startedLinger, r.kick)
			} else {
				r.mu.company.Reset(startedLinger)
			}
		}
		r.mu.Unlock()
		return
	}
	r.mu.finishes++
	r.mu.Unlock()
	r.kick()
}

// kick has the loop look at what is queued again (the executor's queue
// emptied: results waiting for company may go now).
func (r *reporter) kick() {
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
	r.mu.Lock()
	if r.mu.company != nil {
		r.mu.company.Stop()
	}
	r.mu.Unlock()
}

// loop flushes what is queued: at once when a task.finished waits and
// the executor holds no attempt waiting for a slot (the leader's next
// decision may be what the next slot waits for); within finishedLinger
// when attempts wait (their slots stay busy meanwhile, so the result's
// latency costs no slot, and more results share one Emit, one signed
// message and one leader decision), or once finishedGroup results are
// queued; a task.started alone waits up to startedLinger for company.
func (r *reporter) loop() {
	defer close(r.done)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	var deadline time.Time // when the armed timer fires; zero: not armed
	for {
		select {
		case <-r.wake:
			r.wakes++
			wait, ok := r.wait()
			if !ok {
				continue
			}
			if wait <= 0 {
				linger.Stop()
				deadline = time.Time{}
				r.flush()
				continue
			}
			if at := time.Now().Add(wait); deadline.IsZero() || at.Before(deadline) {
				linger.Reset(wait)
				deadline = at
			}
		case <-linger.C:
			deadline = time.Time{}
			r.flush()
		case <-r.quit:
			r.flush()
			return
		}
	}
}

const (
	// startedLinger is how long a task.started may wait for company.
	startedLinger = 20 * time.Millisecond
	// finishedLinger is how long a task.finished may wait for company
	// while attempts wait for a slot.
	finishedLinger = 10 * time.Millisecond
	// finishedGroup is how many queued task.finished are flushed at once.
	finishedGroup = 32
)

// wait returns how long what is queued may wait before it is flushed
// (0: now); false when nothing is queued.
func (r *reporter) wait() (time.Duration, bool) {
	r.mu.Lock()
	queued, finishes, since, linger := len(r.mu.pending), r.mu.finishes, r.mu.since, r.linger
	r.mu.Unlock()
	switch {
	case queued == 0:
		return 0, false
	case finishes == 0:
		return startedLinger - time.Since(since), true
	case finishes >= finishedGroup || r.busy == nil || !r.busy():
		return 0, true
	}
	return linger, true
}

// flush emits every queued draft in one Emit, marks the finished attempts
// in one commit and answers their steps.
func (r *reporter) flush() {
	r.mu.Lock()
	reps := r.mu.pending
	r.mu.pending = nil
	r.mu.finishes = 0
	if r.mu.company != nil {
		r.mu.company.Stop()
	}
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
