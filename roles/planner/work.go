package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// maxRejection caps the error text of a PlanRejected event.
const maxRejection = 16 << 10

// loop hands due runs to workers whenever it is woken: by Settled, by a
// finished job, or by the end of a retry backoff.
func (p *Planner) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		jobs, wait := p.take()
		for _, j := range jobs {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.runJob(ctx, j)
			}()
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-timer.C:
		}
	}
}

// take returns the runs to plan now, up to the free workers; nothing until
// the node is live.
func (p *Planner) take() ([]job, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.live {
		return nil, 0
	}
	jobs, wait := p.mu.runs.take(p.now(), p.cfg.Workers-p.mu.running, claimer{
		self: p.env.Node, claimTimeout: p.claimTimeout(),
		canPlan:     func(g event.GoalSubmittedData) bool { _, err := p.source(g); return err == nil },
		canReplan:   func(*event.PlanReplanRequestedData) bool { _, ok := p.cfg.Text.(ReplanSource); return ok },
		canCritique: p.canCritique(),
	})
	p.mu.running += len(jobs)
	return jobs, wait
}

// runJob plans one run and emits the proposal or rejection.
func (p *Planner) runJob(ctx context.Context, j job) {
	o := p.process(ctx, j)
	p.mu.Lock()
	p.mu.running--
	p.mu.runs.finish(j.key(), j.kind, o, p.now(), p.backoff)
	p.mu.Unlock()
	p.poke()
}

// process plans run j and emits the result, reporting how that went.
func (p *Planner) process(ctx context.Context, j job) outcome {
	d, src := p.draft(ctx, j)
	if ctx.Err() != nil {
		return outAbandoned
	}
	ectx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	if err := p.env.Emit.Emit(ectx, d); err != nil {
		if ctx.Err() != nil {
			return outAbandoned
		}
		p.log.Error("emit plan", "run", j.id, "type", d.Type, "err", err)
		return outFailed
	}
	switch d.Type {
	case event.PlanClaimed:
		p.log.Debug("plan claimed", "run", j.id, "source", src, "event", d.ID)
	case event.PlanProposed:
		p.log.Info("plan proposed", "run", j.id, "source", src, "event", d.ID)
	case event.CritiqueRecorded:
		p.logVerdict(j, d)
	default:
		var r event.PlanRejectedData
		_ = json.Unmarshal(d.Data, &r)
		p.log.Warn("plan rejected", "run", j.id, "source", src, "event", d.ID, "reason", r.Error)
	}
	return outEmitted
}

// draft produces the event for run j: this planner's claim, a
// plan.proposed, or a plan.rejected saying why there is no plan. It also
// returns the source's name.
func (p *Planner) draft(ctx context.Context, j job) (event.Draft, string) {
	if j.critique != nil {
		return p.draftCritique(ctx, j)
	}
	switch {
	case j.bad != nil:
		return rejection(j.id, j.bad), ""
	case j.kind == jobNoPlanner:
		d := event.MustDraft(event.PlanRejected, j.id, event.PlanRejectedData{Code: event.NoPlanner,
			Error: fmt.Sprintf("planner: no planner that can plan this goal claimed it within %s: %v", p.claimTimeout(), p.cannot(j.goal))})
		return d, ""
	case j.kind == jobClaim:
		src, _ := p.source(j.goal)
		// The claim lapses once planning and emitting could both have
		// timed out, so a planner that died does not hold the run.
		until := p.now().UTC().Add(2*p.cfg.Timeout + p.cfg.MaxRetryBackoff)
		rev := 0
		if j.replan != nil {
			rev = j.replan.Revision + 1
		}
		return event.MustDraft(event.PlanClaimed, j.id, event.PlanClaimedData{Until: until, Source: src.Name(), Revision: rev}), src.Name()
	case j.replan != nil:
		return p.draftReplan(ctx, j)
	}
	src, err := p.source(j.goal)
	if err != nil {
		return rejection(j.id, err), ""
	}
	pctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	var (
		pl   *event.Plan
		info *event.PlannerInfo
	)
	if is, ok := src.(InfoSource); ok {
		pl, info, err = is.PlanInfo(pctx, j.id, j.goal)
	} else {
		pl, err = src.Plan(pctx, j.id, j.goal)
	}
	return p.proposal(ctx, j.id, src, pl, info, err, event.PlanProposedData{Revision: 1})
}

// proposal turns what src returned for run (a plan or an error, and the
// provenance) into the plan.proposed d completes, or a plan.rejected.
func (p *Planner) proposal(ctx context.Context, run string, src Source, pl *event.Plan, info *event.PlannerInfo, err error, d event.PlanProposedData) (event.Draft, string) {
	reject := func(err error) (event.Draft, string) { return rejectionInfo(run, err, info), src.Name() }
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return reject(fmt.Errorf("planner: %s planner timed out after %s: %w", src.Name(), p.cfg.Timeout, err))
	case err != nil:
		return reject(err)
	case pl == nil:
		return reject(fmt.Errorf("planner: %s planner returned no plan", src.Name()))
	}
	open := pl.Open // Normalize rebuilds the steps; a plan's openness is the source's word
	if err := plan.Normalize(pl); err != nil {
		return reject(err)
	}
	pl.Open = open
	d.Source, d.Plan, d.Planner = src.Name(), *pl, info
	draft, err := event.NewDraft(event.PlanProposed, run, d)
	if err != nil {
		return reject(err)
	}
	if len(draft.Data) > envelope.MaxEventBytes {
		return rejection(run, fmt.Errorf("planner: the plan (%d steps) is %d bytes as an event; the limit is %d: split the goal into smaller plans",
			len(pl.Steps), len(draft.Data), envelope.MaxEventBytes)), src.Name()
	}
	return draft, src.Name()
}

// draftReplan asks the replanning source for the next revision of run j
// (after a failure, or the next steps of an open plan, req.Reason): the
// plan.proposed that carries it with the rationale, the failure if one
// asked for it and the provenance, or the plan.rejected saying why there
// is none.
func (p *Planner) draftReplan(ctx context.Context, j job) (event.Draft, string) {
	src, ok := p.cfg.Text.(ReplanSource)
	if !ok {
		return rejection(j.id, fmt.Errorf("%w, and this planner node has no model that can replan", ErrNeedLLM)), ""
	}
	pctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req := *j.replan
	pl, rationale, info, err := src.Replan(pctx, j.id, req)
	failure := &req.Failure
	if req.Reason == event.ReplanNext {
		failure = nil // every step of the open plan ended: no failure asked for it
	}
	return p.proposal(ctx, j.id, src, pl, info, err, event.PlanProposedData{
		Revision: req.Revision + 1, Replaces: req.Revision, Rationale: rationale, Failure: failure,
	})
}

// cannot says why this planner cannot plan g (for the no_planner
// rejection).
func (p *Planner) cannot(g event.GoalSubmittedData) error {
	if _, err := p.source(g); err != nil {
		return err
	}
	return errors.New("the planner that could plan it did not claim it in time")
}

// source picks the planner for a goal: the plan file when there is one
// (even if the goal also has text), else the LLM source for text, else,
// for a goal that only names a family, the family's template.
func (p *Planner) source(g event.GoalSubmittedData) (Source, error) {
	switch {
	case g.PlanFile != "":
		return p.file, nil
	case g.Text != "" && p.cfg.Text != nil:
		return p.cfg.Text, nil
	case g.Text != "":
		return nil, fmt.Errorf("%w, and none is configured on this planner node: configure an LLM planner, "+
			"or submit a plan file instead (YAML or JSON, see examples/hello.yaml): agentctl goal submit -f plan.yaml", ErrNeedLLM)
	case g.Family != "":
		// Neither a plan file nor text: the family's template.
		return TemplateSource{Lookup: p.cfg.Templates}, nil
	default:
		return nil, ErrNoGoal
	}
}

// rejection is the plan.rejected event for run with err as its message.
func rejection(run string, err error) event.Draft { return rejectionInfo(run, err, nil) }

// rejectionInfo is rejection with the provenance of a failed model
// planning (nil for none).
func rejectionInfo(run string, err error, info *event.PlannerInfo) event.Draft {
	msg := err.Error()
	if len(msg) > maxRejection {
		msg = msg[:maxRejection] + "\n... (truncated)"
	}
	d := event.MustDraft(event.PlanRejected, run, event.PlanRejectedData{Error: msg, Planner: info})
	if info != nil && len(d.Data) > envelope.MaxEventBytes {
		// The answers are what made it too large: keep the error.
		d = event.MustDraft(event.PlanRejected, run, event.PlanRejectedData{Error: msg})
	}
	return d
}

// backoff is the delay before the next emit after failures failed ones.
func (p *Planner) backoff(failures int) time.Duration {
	d := p.cfg.RetryBackoff
	for i := 1; i < failures && d < p.cfg.MaxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, p.cfg.MaxRetryBackoff)
}
