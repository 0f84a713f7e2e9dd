package planner

import (
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
)

// Fold learns from a committed event which runs need a plan: a
// goal.submitted opens a run; a plan.proposed or plan.rejected (from any
// planner) or a run.cancel closes it. It never blocks on I/O.
func (p *Planner) Fold(ev event.Event) {
	p.folded = ev.Seq
	switch ev.Type {
	case event.GoalSubmitted:
		p.foldGoal(ev)
	case event.PlanClaimed:
		var d event.PlanClaimedData
		if ev.Run == "" || ev.Decode(&d) != nil {
			return
		}
		p.mu.Lock()
		p.mu.runs.claimed(ev.Run, ev.Node, ev.Time, d.Until)
		p.mu.Unlock()
		p.poke()
	case event.PlanProposed, event.PlanRejected, event.RunCancel:
		if ev.Run == "" {
			return
		}
		p.mu.Lock()
		p.mu.runs.close(ev.Run)
		p.mu.Unlock()
	}
}

func (p *Planner) foldGoal(ev event.Event) {
	if ev.Run == "" {
		p.log.Warn("goal without run id", "event", ev.ID, "seq", ev.Seq)
		return
	}
	r := &pending{id: ev.Run, seq: ev.Seq, at: ev.Time}
	if err := ev.Decode(&r.goal); err != nil {
		r.bad = fmt.Errorf("planner: unreadable goal: %w", err)
	}
	p.mu.Lock()
	p.mu.runs.submit(r)
	p.mu.Unlock()
}

// Settled wakes the planning loop when the node is live: every run still
// without a plan is planned then, including goals submitted before a
// restart. While the node restores or catches up, nothing is planned.
func (p *Planner) Settled(live bool) {
	p.mu.Lock()
	p.mu.live = live
	p.mu.Unlock()
	if live {
		p.poke()
	}
}
