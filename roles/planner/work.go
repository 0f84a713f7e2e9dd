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
	jobs, wait := p.mu.runs.take(p.now(), p.cfg.Workers-p.mu.running)
	p.mu.running += len(jobs)
	return jobs, wait
}

// runJob plans one run and emits the proposal or rejection.
func (p *Planner) runJob(ctx context.Context, j job) {
	o := p.process(ctx, j)
	p.mu.Lock()
	p.mu.running--
	p.mu.runs.finish(j.id, o, p.now(), p.backoff)
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
	if d.Type == event.PlanProposed {
		p.log.Info("plan proposed", "run", j.id, "source", src, "event", d.ID)
	} else {
		var r event.PlanRejectedData
		_ = json.Unmarshal(d.Data, &r)
		p.log.Warn("plan rejected", "run", j.id, "source", src, "event", d.ID, "reason", r.Error)
	}
	return outEmitted
}

// draft produces the event for run j: a plan.proposed, or a plan.rejected
// saying why there is no plan. It also returns the source's name.
func (p *Planner) draft(ctx context.Context, j job) (event.Draft, string) {
	if j.bad != nil {
		return rejection(j.id, j.bad), ""
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
	reject := func(err error) (event.Draft, string) { return rejectionInfo(j.id, err, info), src.Name() }
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return reject(fmt.Errorf("planner: %s planner timed out after %s: %w", src.Name(), p.cfg.Timeout, err))
	case err != nil:
		return reject(err)
	case pl == nil:
		return reject(fmt.Errorf("planner: %s planner returned no plan", src.Name()))
	}
	if err := plan.Normalize(pl); err != nil {
		return reject(err)
	}
	d, err := event.NewDraft(event.PlanProposed, j.id, event.PlanProposedData{Revision: 1, Source: src.Name(), Plan: *pl, Planner: info})
	if err != nil {
		return reject(err)
	}
	if len(d.Data) > envelope.MaxEventBytes {
		return rejection(j.id, fmt.Errorf("planner: the plan (%d steps) is %d bytes as an event; the limit is %d: split the goal into smaller plans",
			len(pl.Steps), len(d.Data), envelope.MaxEventBytes)), src.Name()
	}
	return d, src.Name()
}

// source picks the planner for a goal: the plan file when there is one
// (even if the goal also has text), else the LLM source for text.
func (p *Planner) source(g event.GoalSubmittedData) (Source, error) {
	switch {
	case g.PlanFile != "":
		return p.file, nil
	case g.Text != "" && p.cfg.Text != nil:
		return p.cfg.Text, nil
	case g.Text != "":
		return nil, fmt.Errorf("%w, and none is configured on this planner node: configure an LLM planner, "+
			"or submit a plan file instead (YAML or JSON, see examples/hello.yaml): agentctl goal submit -f plan.yaml", ErrNeedLLM)
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
