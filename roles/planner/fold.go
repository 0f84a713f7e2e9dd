package planner

import (
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// Fold learns from a committed event which runs need a plan: a
// goal.submitted opens a run, and a plan.replan_requested opens it again
// for its next revision; a plan.proposed or plan.rejected (from any
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
		if d.Step != "" {
			p.mu.runs.critiqueClaimed(ev.Run, d.Step, d.Attempt, ev.Node, ev.Time, d.Until)
		} else {
			p.mu.runs.claimed(ev.Run, max(d.Revision, 1), ev.Node, ev.Time, d.Until)
		}
		p.mu.Unlock()
		p.poke()
	case event.PlanReplanRequested:
		p.foldReplan(ev)
	case event.CritiqueRequested, event.CritiqueRecorded, event.RunFinished:
		p.foldCritique(ev)
	case event.PlanProposed:
		var d event.PlanProposedData
		if ev.Run == "" || ev.Decode(&d) != nil {
			return
		}
		p.mu.Lock()
		p.mu.runs.proposed(ev.Run, d.Revision)
		p.mu.Unlock()
	case event.PlanAccepted:
		// A revision the leader accepted needs no proposal: a run planned
		// from its goal (plan.FromGoal) is accepted before its grace ends,
		// and its plan is already in the ledger, in the goal.
		var d event.PlanAcceptedData
		if ev.Run == "" || ev.Decode(&d) != nil {
			return
		}
		p.mu.Lock()
		p.mu.runs.proposed(ev.Run, max(d.Revision, 1))
		p.mu.Unlock()
	case event.PlanRejected, event.RunCancel:
		if ev.Run == "" {
			return
		}
		p.mu.Lock()
		p.mu.runs.close(ev.Run)
		p.mu.Unlock()
	}
}

// GoalPlanGrace is how long after a goal that carries its plan
// (plan.FromGoal) the planner waits before it proposes the plan file:
// the leader plans such a run from the goal, and its plan.accepted, folded
// within the grace, drops the proposal (Fold). Only a run no leader
// accepted — an older release's leader waits for a proposal — is
// proposed; that is the delay such a leader adds to a plan file.
const GoalPlanGrace = 500 * time.Millisecond

func (p *Planner) foldGoal(ev event.Event) {
	if ev.Run == "" {
		p.log.Warn("goal without run id", "event", ev.ID, "seq", ev.Seq)
		return
	}
	r := &pending{id: ev.Run, seq: ev.Seq, at: ev.Time}
	if err := ev.Decode(&r.goal); err != nil {
		r.bad = fmt.Errorf("planner: unreadable goal: %w", err)
	} else if plan.FromGoal(r.goal) != nil {
		// The leader plans the run from its goal: its acceptance, folded
		// within the grace, drops the proposal; only an older leader,
		// which waits for one, gets it.
		r.notBefore = p.now().Add(GoalPlanGrace)
	}
	p.mu.Lock()
	p.mu.runs.submit(r)
	p.mu.Unlock()
}

// foldReplan opens a running run again for its next revision. A run
// whose plan came from a file cannot be replanned: it is rejected at once
// (by any planner), which fails the run.
func (p *Planner) foldReplan(ev event.Event) {
	if ev.Run == "" {
		return
	}
	var d event.PlanReplanRequestedData
	r := &pending{id: ev.Run, seq: ev.Seq, at: ev.Time, replan: &d}
	switch err := ev.Decode(&d); {
	case err != nil:
		r.replan = &event.PlanReplanRequestedData{}
		r.bad = fmt.Errorf("planner: unreadable replan request: %w", err)
	case d.Source == SourceTemplate:
		r.bad = fmt.Errorf("planner: a run planned from family %s's template cannot be replanned: change the template through a proposal "+
			"(agentctl proposal ls), or submit the goal as text for a model to plan", d.Goal.Family)
	case d.Source == "file" || d.Goal.Text == "":
		r.bad = fmt.Errorf("%w: fix the plan file and submit it again, or submit the goal as text for a model to plan", ErrFileReplan)
	}
	r.goal = d.Goal
	p.mu.Lock()
	p.mu.runs.replan(r)
	p.mu.Unlock()
	p.poke()
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
