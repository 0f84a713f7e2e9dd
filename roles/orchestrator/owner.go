package orchestrator

import (
	"context"
	"slices"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// input is one thing handed to the owner of the core: a committed event,
// the node's liveness, a restored state, or a question (ask) answered on
// the owner's goroutine, done closed after.
type input struct {
	ev      *event.Event
	settled bool
	live    bool
	restore *core.State
	ask     func(c *owner)
	done    chan struct{}
}

// readView is what the owner publishes after each batch of inputs, for
// readers that must not wait for it: Load and the lease loop.
type readView struct {
	load   map[string]int
	epoch  uint64 // the newest leader epoch folded
	leader string // its leader
}

// owner is the core and what goes with it, touched only by the goroutine
// that owns it (run), or, while none runs, by the caller holding
// Orchestrator.hand.
type owner struct {
	o        *Orchestrator
	state    *core.State
	inflight map[core.DecisionKey]bool
	byID     map[string]core.DecisionKey // decision event id → key
	live     bool
	epoch    uint64 // the lease loop's epoch as the last turn read it
	// warned: the log said that the ledger holds another policy than
	// the file's.
	warned bool

	// What a batch of inputs asks once its view is published: wake the
	// lease loop (an election or settings folded), tell it the node is
	// live, decide.
	wakeLease, wentLive, due bool
}

func newOwner(o *Orchestrator) *owner {
	return &owner{o: o, state: core.NewState(), inflight: map[core.DecisionKey]bool{}, byID: map[string]core.DecisionKey{}}
}

// handle applies one input.
func (c *owner) handle(in input) {
	switch {
	case in.ev != nil:
		c.state.Apply(*in.ev)
		if key, ok := c.byID[in.ev.ID]; ok {
			delete(c.byID, in.ev.ID)
			delete(c.inflight, key)
		}
		if in.ev.Type == event.LeaderElected || in.ev.Type == event.ClusterSettings {
			c.wakeLease = true
		}
	case in.settled:
		c.live = in.live
		if in.live {
			c.wentLive, c.due = true, true
		}
	case in.restore != nil:
		c.state = in.restore
	case in.ask != nil:
		in.ask(c)
		if in.done != nil {
			close(in.done)
		}
	}
}

// publish stores the view of the state for readers.
func (c *owner) publish() {
	c.o.view.Store(&readView{load: c.state.Load(), epoch: c.state.Epoch, leader: c.state.Leader})
}

// afterPublish wakes the lease loop if the batch asks it; the lease loop
// reads the view just published.
func (c *owner) afterPublish() {
	if c.wakeLease {
		c.wakeLease = false
		c.o.lease.wake()
	}
	if c.wentLive {
		c.wentLive = false
		c.o.leaseSettled(true)
	}
}

// run owns the core until ctx ends: it folds what it is handed, in
// order, and decides on a kick (live, an epoch won or lost), at the wake
// Decide asked for, or on a membership change or tick. It hands decisions
// to the emitter (jobs) and decides again only once it answered
// (results: the drafts not emitted, to forget), as one loop that emitted
// itself would.
func (c *owner) run(ctx context.Context, jobs chan<- []event.Draft, results <-chan []event.Draft) {
	o := c.o
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var changed <-chan struct{}
	var tick <-chan time.Time
	var absentAfter time.Time
	if o.cfg.Membership != nil {
		changed = o.cfg.Membership.Changed()
		t := time.NewTicker(membershipTick)
		defer t.Stop()
		tick = t.C
		absentAfter = time.Now().UTC().Add(o.cfg.MembershipGrace)
	}
	emitting := false
	for {
		select {
		case <-ctx.Done():
			c.drain()
			return
		case in := <-o.in:
			c.handle(in)
			c.batch()
			c.publish()
			c.afterPublish()
			if !c.due {
				continue
			}
		case failed := <-results:
			emitting = false
			c.forget(failed)
			if !c.due {
				continue
			}
		case <-o.kick:
		case <-timer.C:
		case <-changed:
		case <-tick:
		}
		if emitting {
			c.due = true
			continue
		}
		c.due = false
		drafts, wake := c.decide(absentAfter)
		if len(drafts) > 0 {
			jobs <- drafts // the emitter is idle: it answered the last job
			emitting = true
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !wake.IsZero() {
			timer.Reset(max(time.Until(wake), time.Millisecond))
		} else {
			timer.Reset(time.Hour)
		}
	}
}

// batch handles the inputs already waiting, up to inputBuffer, so that a
// burst of folds publishes one view.
func (c *owner) batch() {
	for range inputBuffer {
		select {
		case in := <-c.o.in:
			c.handle(in)
		default:
			return
		}
	}
}

// drain handles every input handed over before Stop took the hand.
func (c *owner) drain() {
	for {
		select {
		case in := <-c.o.in:
			c.handle(in)
		default:
			c.publish()
			c.afterPublish()
			return
		}
	}
}

// decide runs ReconcileMembers (with a membership) and Decide if this node
// leads, is live, and has folded its own leader.elected (so it has seen
// every decision of the leaders before it). Membership decisions come
// first: what Decide gives up because of them, it gives up once they are
// folded. A leader that stops leading, or leads again, forgets its
// decisions in flight.
func (c *owner) decide(absentAfter time.Time) ([]event.Draft, time.Time) {
	o := c.o
	if e := o.epoch.Load(); e != c.epoch {
		c.epoch = e
		clear(c.inflight)
		clear(c.byID)
	}
	if !c.live || c.epoch == 0 || c.state.Epoch != c.epoch {
		return nil, time.Time{}
	}
	var members *core.MemberView
	if o.cfg.Membership != nil {
		members = &core.MemberView{Members: o.cfg.Membership.Members(), AbsentAfter: absentAfter}
	}
	now := time.Now().UTC()
	var ds []core.Decision
	var wake time.Time
	if members != nil {
		ds, wake = core.ReconcileMembers(c.state, *members, now, c.epoch, c.inflight)
	}
	if p := c.state.Policy; p != nil && o.bootstrapHash != "" && p.Hash != o.bootstrapHash && !c.warned {
		c.warned = true
		o.log.Warn("the policy file differs from the policy in force in the ledger, which stays in force",
			"ledger_version", p.Version, "ledger_hash", p.Hash, "file_hash", o.bootstrapHash,
			"hint", "change the policy in force with agentctl policy apply -f FILE")
	}
	more, w := core.DecideWith(c.state, now, c.epoch, c.inflight, core.Options{Policy: o.bootstrap, Facts: o.cfg.Facts, Artifacts: o.cfg.Artifacts})
	ds = append(ds, more...)
	if wake.IsZero() || (!w.IsZero() && w.Before(wake)) {
		wake = w
	}
	if o.cfg.Paused != nil && o.cfg.Paused() != nil {
		ds = slices.DeleteFunc(ds, func(d core.Decision) bool { return d.Draft.Type == event.TaskAssigned })
		if again := now.Add(pausedRecheck); wake.IsZero() || again.Before(wake) {
			wake = again
		}
	}
	drafts := make([]event.Draft, len(ds))
	for i, d := range ds {
		c.inflight[d.Key] = true
		c.byID[d.Draft.ID] = d.Key
		drafts[i] = d.Draft
	}
	return drafts, wake
}

// forget drops the in-flight marks of drafts that could not be emitted,
// so that the next turn decides them again.
func (c *owner) forget(drafts []event.Draft) {
	for _, d := range drafts {
		if key, ok := c.byID[d.ID]; ok {
			delete(c.byID, d.ID)
			delete(c.inflight, key)
		}
	}
}
