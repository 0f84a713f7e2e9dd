package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
)

// CritiqueSource judges critique steps (roles/planner/llm): whether the
// output of a step meets the critique's criteria. A planner whose text
// source is one claims critique requests; one without never does, and
// when no planner claimed a request within the claim timeout, any planner
// records verdict error with code no_planner.
type CritiqueSource interface {
	// Critique judges req (the step, its target's end and output, the
	// criteria) and returns the verdict (pass or fail), the judgement,
	// and the provenance of the model call(s), returned with errors too
	// as far as judging got (nil when it got nowhere). An error means no
	// verdict: the planner records verdict error with it.
	Critique(ctx context.Context, run string, req event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error)
}

// Critique jobs. The leader asks for a critique attempt with
// critique.requested; the fold keeps it pending (one per step: a later
// attempt replaces an earlier one) until a critique.recorded for that
// attempt, or the run's run.finished, is folded. It is claimed and
// judged like a plan: a plan.claimed naming the step and attempt holds
// it for its planner, which judges it and emits critique.recorded.

// critiqueKey is the pending key of a run's critique step: apart from
// the run's own key (its id), which a plan or replan uses.
func critiqueKey(run, step string) string { return run + "\x00" + step }

// key is the pending's key in runs.pending.
func (p *pending) key() string {
	if p.critique != nil {
		return critiqueKey(p.id, p.critique.Step)
	}
	return p.id
}

// key is the key of the pending j works on.
func (j job) key() string {
	if j.critique != nil {
		return critiqueKey(j.id, j.critique.Step)
	}
	return j.id
}

// critiqueClaimed folds a plan.claimed for a critique attempt of run,
// by the rules of plan claims (runs.claimed): a claim for another
// attempt than the one pending is ignored.
func (r *runs) critiqueClaimed(run, step string, attempt int, node string, at, until time.Time) {
	p := r.pending[critiqueKey(run, step)]
	if p == nil || p.critique.Attempt != attempt {
		return
	}
	if p.claim == nil || at.After(p.claim.until) {
		p.claim = &claim{by: node, until: until}
	}
	if p.phase == claiming {
		p.phase = waiting
	}
}

// request records a critique request: it replaces an earlier attempt's
// request of the step, and is ignored when the same or a later attempt
// is pending.
func (r *runs) request(p *pending) {
	if old := r.pending[p.key()]; old != nil && old.critique.Attempt >= p.critique.Attempt {
		return
	}
	r.pending[p.key()] = p
}

// recorded forgets the critique attempt a verdict was recorded for.
func (r *runs) recorded(run, step string, attempt int) {
	if p := r.pending[critiqueKey(run, step)]; p != nil && p.critique.Attempt == attempt {
		delete(r.pending, critiqueKey(run, step))
	}
}

// runEnded forgets a finished run's critiques: nobody waits for them.
func (r *runs) runEnded(run string) {
	for k, p := range r.pending {
		if p.critique != nil && p.id == run {
			delete(r.pending, k)
		}
	}
}

// foldCritique folds critique.requested (a critique to judge),
// critique.recorded (a verdict, from any planner) and run.finished.
func (p *Planner) foldCritique(ev event.Event) {
	if ev.Run == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case event.CritiqueRequested:
		var d event.CritiqueRequestedData
		if err := ev.Decode(&d); err != nil || d.Step == "" {
			p.log.Warn("unreadable critique request", "run", ev.Run, "event", ev.ID, "err", err)
			return
		}
		p.mu.runs.request(&pending{id: ev.Run, seq: ev.Seq, at: ev.Time, critique: &d})
		p.poke()
	case event.CritiqueRecorded:
		var d event.CritiqueRecordedData
		if ev.Decode(&d) == nil {
			p.mu.runs.recorded(ev.Run, d.Step, d.Attempt)
		}
	case event.RunFinished:
		p.mu.runs.runEnded(ev.Run)
	}
}

// MaxJudgement caps the judgement a critique.recorded carries (a model
// asked for one to three sentences may answer with pages): the rest is
// cut, marked "(truncated)". The full answer stays in the provenance
// (PlannerInfo.Responses) when the event has room for it.
const MaxJudgement = 4 << 10

// canCritique reports whether this planner can judge critiques.
func (p *Planner) canCritique() bool {
	_, ok := p.cfg.Text.(CritiqueSource)
	return ok
}

// draftCritique produces the event of critique job j: this planner's
// claim, the verdict error no_planner, or the verdict of its source.
func (p *Planner) draftCritique(ctx context.Context, j job) (event.Draft, string) {
	req := *j.critique
	rec := event.CritiqueRecordedData{Step: req.Step, Attempt: req.Attempt, Verdict: event.VerdictError}
	src, ok := p.cfg.Text.(CritiqueSource)
	name := ""
	if ok {
		name = p.cfg.Text.Name()
	}
	switch {
	case j.kind == jobClaim:
		until := p.now().UTC().Add(2*p.cfg.Timeout + p.cfg.MaxRetryBackoff)
		return event.MustDraft(event.PlanClaimed, j.id, event.PlanClaimedData{Until: until, Source: name,
			Step: req.Step, Attempt: req.Attempt}), name
	case j.kind == jobNoPlanner || !ok:
		rec.Code = event.NoPlanner
		rec.Error = fmt.Sprintf("planner: no planner that can judge critiques (one with a model) claimed it within %s", p.cfg.ClaimTimeout)
		return event.MustDraft(event.CritiqueRecorded, j.id, rec), ""
	}
	if req.Kind == event.KindSynthesise {
		return p.draftSynthesis(ctx, j, rec), name // synthesis.go
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	verdict, judgement, info, err := src.Critique(cctx, j.id, req)
	rec.Planner = info
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		rec.Error = fmt.Sprintf("planner: %s critique timed out after %s: %v", name, p.cfg.Timeout, err)
	case err != nil:
		rec.Error = err.Error()
	case verdict != event.VerdictPass && verdict != event.VerdictFail:
		rec.Error = fmt.Sprintf("planner: %s critique gave no verdict (%q)", name, verdict)
	default:
		rec.Verdict, rec.Judgement = verdict, judgement
	}
	if len(rec.Error) > maxRejection {
		rec.Error = rec.Error[:maxRejection] + "\n... (truncated)"
	}
	if n := MaxJudgement; len(rec.Judgement) > n {
		for n > 0 && !utf8.RuneStart(rec.Judgement[n]) {
			n--
		}
		rec.Judgement = rec.Judgement[:n] + "\n... (truncated)"
	}
	d := event.MustDraft(event.CritiqueRecorded, j.id, rec)
	if len(d.Data) > envelope.MaxEventBytes && rec.Planner != nil {
		// The answers are what made it too large: keep the verdict.
		info := *rec.Planner
		info.Responses = nil
		rec.Planner = &info
		d = event.MustDraft(event.CritiqueRecorded, j.id, rec)
	}
	return d, name
}

// logVerdict logs the critique.recorded d that job j emitted.
func (p *Planner) logVerdict(j job, d event.Draft) {
	var rec event.CritiqueRecordedData
	_ = json.Unmarshal(d.Data, &rec)
	p.log.Info("critique recorded", "run", j.id, "step", rec.Step, "attempt", rec.Attempt,
		"verdict", rec.Verdict, "code", rec.Code, "error", rec.Error, "event", d.ID)
}
