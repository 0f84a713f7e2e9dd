package llm

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
	"github.com/agentic-dev/agentic/roles/policy"
)

// Scoring names the candidates' score in provenance
// (event.PlannerInfo.Scoring): the formula and its version. A change of
// the formula is a new version.
const Scoring = "candidates/1: score = 10*risk + steps + 5*history, lowest wins (then fewest steps, then the first asked); " +
	"risk: steps the policy in force gates (confirm); history: over the steps' command shapes, the sum of " +
	"failures/(successes+failures) in memory's command statistics; a candidate with a step the policy denies " +
	"is chosen only when every candidate has one"

// Weights of the score (Scoring).
const (
	riskWeight    = 10
	historyWeight = 5
)

// choose asks the model for Config.Candidates plans (one, unscored, by
// default), each with the seed + i when a seed is set (servers such as
// Ollama ignore the API's n), checks each as ask does, scores the valid
// ones (score) and returns the best, with every candidate recorded in
// the provenance. A candidate that is no valid plan is recorded with its
// error; when none is valid, the last error is returned. Every
// candidate's tokens count against the budget: a candidate the budget
// cannot cover is not asked for.
func (s *Source) choose(ctx context.Context, run string, goal event.GoalSubmittedData, msgs []Message, used int, in Inputs, f form) (*event.Plan, string, *event.PlannerInfo, error) {
	budget := s.budget(in)
	k := s.cfg.Candidates
	if k <= 1 {
		return s.ask(ctx, run, goal, msgs, used, budget, f, s.cfg.Seed)
	}
	type valid struct {
		plan      *event.Plan
		rationale string
		at        int // index in cands
	}
	var (
		info    *event.PlannerInfo
		cands   []event.Candidate
		plans   []valid
		lastErr error
	)
	stats := make(map[string]memory.CommandStat, len(in.Commands))
	for _, c := range in.Commands {
		stats[c.Shape] = c
	}
	for i := range k {
		seed := s.cfg.Seed
		if seed != nil {
			v := *seed + int64(i)
			seed = &v
		}
		spent := 0
		if info != nil {
			spent = info.PromptTokens + info.CompletionTokens
		}
		p, rationale, ci, err := s.ask(ctx, run, goal, msgs, used+spent, budget, f, seed)
		if ci == nil { // nothing asked: the budget was spent before
			lastErr = err
			break
		}
		info = merge(info, ci)
		c := event.Candidate{Response: len(info.Responses) - 1, Seed: seed}
		if err != nil {
			c.Error, lastErr = err.Error(), err
			cands = append(cands, c)
			if errors.Is(err, ErrInvalidPlan) {
				continue
			}
			break // the server, the budget or the time: asking again would not help
		}
		sc := score(p, in.Policy, stats)
		sc.Response, sc.Seed = c.Response, seed
		cands = append(cands, sc)
		plans = append(plans, valid{plan: p, rationale: rationale, at: len(cands) - 1})
	}
	if info == nil {
		return nil, "", nil, lastErr
	}
	info.Seed, info.Scoring, info.Candidates = s.cfg.Seed, Scoring, cands
	if len(plans) == 0 {
		return nil, "", info, lastErr
	}
	allDenied := !slices.ContainsFunc(plans, func(v valid) bool { return cands[v.at].Denied == 0 })
	best := -1
	for i, v := range plans {
		c := cands[v.at]
		if c.Denied > 0 && !allDenied {
			continue
		}
		if best < 0 || better(c, cands[plans[best].at]) {
			best = i
		}
	}
	cands[plans[best].at].Chosen = true
	return plans[best].plan, plans[best].rationale, info, nil
}

// better reports whether candidate a beats b: a lower score, then fewer
// steps. Candidates are compared in the order asked, so a tie goes to
// the first.
func better(a, b event.Candidate) bool {
	if c := cmp.Compare(a.Score, b.Score); c != 0 {
		return c < 0
	}
	return a.Steps < b.Steps
}

// score scores plan p (Scoring): the steps pol gates and denies, its
// step count and its commands' expected failures by their history.
func score(p *event.Plan, pol *policy.Policy, stats map[string]memory.CommandStat) event.Candidate {
	c := event.Candidate{Steps: len(p.Steps)}
	for _, st := range p.Steps {
		if pol != nil {
			switch pol.JudgeStep(st, st.Cwd).Action {
			case policy.Deny:
				c.Denied++
			case policy.Confirm:
				c.Risk++
			}
		}
		if st.Kind != event.KindShell && st.Kind != "" {
			continue
		}
		for _, shape := range memory.Shapes(st.Run) {
			if h, ok := stats[shape]; ok && h.Successes+h.Failures > 0 {
				c.History += float64(h.Failures) / float64(h.Successes+h.Failures)
			}
		}
	}
	c.History = math.Round(c.History*1000) / 1000
	c.Score = math.Round((riskWeight*float64(c.Risk)+float64(c.Steps)+historyWeight*c.History)*1000) / 1000
	return c
}

// merge adds the provenance of one more call to info (nil: none yet).
func merge(info, more *event.PlannerInfo) *event.PlannerInfo {
	if info == nil {
		c := *more
		c.Responses = slices.Clone(more.Responses)
		return &c
	}
	info.ServedModel, info.Fingerprint = more.ServedModel, more.Fingerprint
	info.PromptTokens += more.PromptTokens
	info.CompletionTokens += more.CompletionTokens
	info.Latency += more.Latency
	info.Responses = append(info.Responses, more.Responses...)
	return info
}
