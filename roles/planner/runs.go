package planner

import (
	"cmp"
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
	// claiming: this planner's plan.claimed is in the outbox; the fold of
	// the run's first claim says who plans it.
	claiming
)

// claim is the claim that holds a run: who plans it, and until when.
type claim struct {
	by    string
	until time.Time
}

// pending is a submitted run without a plan.
type pending struct {
	id   string
	seq  uint64    // ledger position of its goal.submitted: planning order
	at   time.Time // its goal.submitted's time: the claim timeout runs from it
	goal event.GoalSubmittedData
	// claim is the claim that holds the run, nil while none does.
	claim *claim
	// replan is the leader's request for the next revision of a running
	// run, nil for a first plan.
	replan *event.PlanReplanRequestedData
	// critique is the leader's request to judge a critique attempt, nil
	// for a plan (critique.go).
	critique *event.CritiqueRequestedData
	// bad is set when the goal's payload did not decode, or the run
	// cannot be replanned; the run is rejected with it.
	bad       error
	phase     phase
	failures  int       // failed emits so far
	notBefore time.Time // earliest retry after a failed emit
}

// jobKind is what a worker does with a run.
type jobKind int

const (
	// jobPlan plans the run (or rejects a goal no planner can read) and
	// emits the result.
	jobPlan jobKind = iota
	// jobClaim emits this planner's plan.claimed.
	jobClaim
	// jobNoPlanner rejects the run: nobody claimed it in time.
	jobNoPlanner
)

// job is a run handed to a worker: a copy, so the worker needs no lock.
type job struct {
	kind   jobKind
	id     string
	goal   event.GoalSubmittedData
	replan *event.PlanReplanRequestedData
	bad    error
	// critique is the attempt a critique job judges (critique.go).
	critique *event.CritiqueRequestedData
}

// revision is the plan revision a pending run waits for.
func (p *pending) revision() int {
	if p.replan != nil {
		return p.replan.Revision + 1
	}
	return 1
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
	if _, dup := r.pending[p.key()]; dup {
		return false
	}
	r.pending[p.key()] = p
	return true
}

// close forgets a run.
func (r *runs) close(id string) { delete(r.pending, id) }

// proposed forgets a run whose revision rev (or a later one) was
// proposed; an older revision's proposal leaves a replan pending.
func (r *runs) proposed(id string, rev int) {
	if p := r.pending[id]; p != nil && rev >= p.revision() {
		delete(r.pending, id)
	}
}

// replan records the leader's request for the next revision of a running
// run: it replaces what is pending for the run (the run's earlier
// revision was proposed).
func (r *runs) replan(p *pending) { r.pending[p.id] = p }

// claimer is what take needs to know of this planner.
type claimer struct {
	self    string                               // this node
	canPlan func(g event.GoalSubmittedData) bool // whether it can plan a goal
	// canReplan says whether it can replan a run.
	canReplan func(req *event.PlanReplanRequestedData) bool
	// canCritique says whether it can judge critiques (it has a model).
	canCritique  bool
	claimTimeout time.Duration
}

// take hands out up to n jobs for the waiting runs, oldest goal first:
// a goal that did not decode or has nothing to plan is rejected at once
// (any planner may), and a plan file is planned at once, unclaimed; a run
// that no live claim holds is claimed when this
// planner can plan it, or rejected with no_planner once the claim timeout
// has passed since its goal; a run this planner's claim holds is planned.
// wait is how long until the next run becomes due (0 if none).
func (r *runs) take(now time.Time, n int, c claimer) (jobs []job, wait time.Duration) {
	later := func(t time.Time) {
		if d := t.Sub(now); d > 0 && (wait == 0 || d < wait) {
			wait = d
		}
	}
	var due []*pending
	for _, p := range r.pending {
		if p.phase != waiting {
			continue
		}
		if p.notBefore.After(now) {
			later(p.notBefore)
			continue
		}
		due = append(due, p)
	}
	slices.SortFunc(due, func(a, b *pending) int { return cmp.Compare(a.seq, b.seq) })
	for _, p := range due {
		if len(jobs) == n {
			break
		}
		kind := jobPlan
		switch {
		case p.critique == nil && (p.bad != nil || (p.goal.PlanFile == "" && p.goal.Text == "")):
			// No plan file and no text: the goal's family's template, or
			// nothing to plan. Planned (or rejected) by whoever sees it
			// first, unclaimed, as a plan file is.
		case p.critique == nil && p.replan == nil && p.goal.PlanFile != "":
			// A plan file needs no claim: every planner reads it into the
			// same plan, and the orchestrator takes the first proposal of
			// a revision and ignores the others. A claim would cost a
			// round trip through the ledger before the run starts.
		case p.claim != nil && !now.After(p.claim.until) && p.claim.by != c.self:
			later(p.claim.until)
			continue
		case p.claim != nil && !now.After(p.claim.until):
			// Ours: plan it.
		case p.replan == nil && c.canPlan(p.goal), p.replan != nil && c.canReplan(p.replan):
			kind = jobClaim
		case p.critique != nil && c.canCritique:
			kind = jobClaim
		case now.Sub(p.at) >= c.claimTimeout:
			kind = jobNoPlanner
		default:
			later(p.at.Add(c.claimTimeout))
			continue
		}
		p.phase = planning
		if kind == jobClaim {
			p.phase = claiming
		}
		jobs = append(jobs, job{kind: kind, id: p.id, goal: p.goal, replan: p.replan, bad: p.bad, critique: p.critique})
	}
	return jobs, wait
}

// claimed folds a plan.claimed for revision rev of run id by node at
// time at: it holds the run unless a claim still in force (by at) does.
// This planner's claim that lost, or the outbox's copy of it, leaves the
// run waiting. A claim for another revision than the one pending is
// ignored.
func (r *runs) claimed(id string, rev int, node string, at, until time.Time) {
	p := r.pending[id]
	if p == nil || rev != p.revision() {
		return
	}
	if p.claim == nil || at.After(p.claim.until) {
		p.claim = &claim{by: node, until: until}
	}
	if p.phase == claiming {
		p.phase = waiting
	}
}

// outcome is how a job ended.
type outcome int

const (
	outEmitted   outcome = iota // the proposal or rejection is in the outbox
	outFailed                   // emit failed: retry after a backoff
	outAbandoned                // the planner stopped: plan again later
)

// finish records the end of a job on the run (or critique) of key; backoff gives the delay
// before a retry after the given number of failures.
func (r *runs) finish(key string, kind jobKind, o outcome, now time.Time, backoff func(failures int) time.Duration) {
	p := r.pending[key]
	if p == nil {
		return // closed meanwhile: its event was folded, or it was cancelled
	}
	switch o {
	case outEmitted:
		if kind == jobClaim {
			return // the claim's fold decides what comes next (it may have come already)
		}
		p.phase = emitted
	case outFailed:
		p.failures++
		p.phase = waiting
		p.notBefore = now.Add(backoff(p.failures))
	case outAbandoned:
		p.phase = waiting
	}
}
