package planner

import (
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// phase is where a run that needs a plan stands in this process.
type phase int

const (
	// waiting: no job has it; it is planned at the next chance (after
	// notBefore).
	waiting phase = iota
	// planning: a job is planning or emitting it.
	planning
	// emitted: its proposal or rejection is in the outbox; the run is
	// forgotten when that event is folded.
	emitted
)

// pending is a submitted run without a plan.
type pending struct {
	id   string
	seq  uint64 // ledger position of its goal.submitted: planning order
	goal event.GoalSubmittedData
	// bad is set when the goal's payload did not decode; the run is
	// rejected with it.
	bad       error
	phase     phase
	failures  int       // failed emits so far
	notBefore time.Time // earliest retry after a failed emit
}

// job is a run handed to a worker: a copy, so the worker needs no lock.
type job struct {
	id   string
	goal event.GoalSubmittedData
	bad  error
}

// runs tracks which runs need a plan. It is folded from the ledger, so after
// a restart it knows again which goals are still unplanned. It holds only
// the runs still waiting for a plan, so it does not grow with history: a
// run closed by its proposal, rejection or cancel is forgotten. A late
// second goal.submitted for a closed run cannot reopen it, because the
// ledger refuses a goal.submitted for a run id it already knows. Not safe
// for concurrent use: the Planner guards it.
type runs struct {
	pending map[string]*pending
}

func newRuns() runs {
	return runs{pending: map[string]*pending{}}
}

// submit records a submitted goal. It reports false for a run already
// pending (the first goal stands).
func (r *runs) submit(p *pending) bool {
	if _, dup := r.pending[p.id]; dup {
		return false
	}
	r.pending[p.id] = p
	return true
}

// close forgets a run.
func (r *runs) close(id string) { delete(r.pending, id) }

// take marks up to n waiting runs as planning, oldest goal first, and
// returns them. wait is how long until the next run in backoff becomes
// due (0 if none is).
func (r *runs) take(now time.Time, n int) (jobs []job, wait time.Duration) {
	var due []*pending
	for _, p := range r.pending {
		if p.phase != waiting {
			continue
		}
		if d := p.notBefore.Sub(now); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		due = append(due, p)
	}
	slices.SortFunc(due, func(a, b *pending) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	for _, p := range due[:min(n, len(due))] {
		p.phase = planning
		jobs = append(jobs, job{id: p.id, goal: p.goal, bad: p.bad})
	}
	return jobs, wait
}

// outcome is how a job ended.
type outcome int

const (
	outEmitted   outcome = iota // the proposal or rejection is in the outbox
	outFailed                   // emit failed: retry after a backoff
	outAbandoned                // the planner stopped: plan again later
)

// finish records the end of a job on run id; backoff gives the delay
// before a retry after the given number of failures.
func (r *runs) finish(id string, o outcome, now time.Time, backoff func(failures int) time.Duration) {
	p := r.pending[id]
	if p == nil {
		return // closed meanwhile: its event was folded, or it was cancelled
	}
	switch o {
	case outEmitted:
		p.phase = emitted
	case outFailed:
		p.failures++
		p.phase = waiting
		p.notBefore = now.Add(backoff(p.failures))
	case outAbandoned:
		p.phase = waiting
	}
}
