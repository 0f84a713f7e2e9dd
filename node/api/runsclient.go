package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// RunsList returns one page of run summaries, newest first.
func (c *Client) RunsList(ctx context.Context, req RunsListRequest) (*Page[RunSummary], error) {
	var p Page[RunSummary]
	if err := c.Call(ctx, MethodRunsList, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// RunsListAll follows runs.list from req on (req.Cursor, if set, being the
// Next of an earlier page) and hands each run to fn until limit runs were
// handed over (limit <= 0: every run that matches) or the listing ends. It
// returns the cursor that continues the listing after the last run handed
// over ("" at the end): as req.Cursor, or as req.After (req.Before when
// req.Before is set: the listing then goes towards newer runs, each page
// newest first) of a new listing with the same filters.
func (c *Client) RunsListAll(ctx context.Context, req RunsListRequest, limit int, fn func(RunSummary) error) (string, error) {
	handed, next, end := 0, "", false
	fetch := func(ctx context.Context, cursor string) (*Page[RunSummary], error) {
		r := req
		r.Cursor = cursor
		want := 0
		if limit > 0 {
			want = limit - handed
			r.Limit = min(want, MaxRunsPage)
		}
		p, err := c.RunsList(ctx, r)
		if err != nil {
			return nil, err
		}
		if want > 0 && len(p.Items) > want {
			return nil, fmt.Errorf("api: %s: a page of %d runs, %d asked for", MethodRunsList, len(p.Items), want)
		}
		next, end = p.Next, p.End
		return p, nil
	}
	for s, err := range Walk(ctx, req.Cursor, fetch) {
		if err != nil {
			return "", err
		}
		if err := fn(s); err != nil {
			return "", err
		}
		if handed++; limit > 0 && handed >= limit {
			break
		}
	}
	if end {
		return "", nil
	}
	return next, nil
}

// SuffixWindow is how many of the newest runs a run id's end is looked for
// among (RunDetail).
const SuffixWindow = MaxRunsPage

// RunDetail answers runs.get: the run's summary and the first page of its
// steps (none with req.Summary). req.ID names the run by its id or a
// unique start of it, as the node resolves it; when no run starts with a
// short req.ID, also by a unique end of it among the SuffixWindow newest
// runs (time-ordered ids of the same minutes share their start, their end
// is random). An end that several of those runs share is ErrAmbiguous,
// listing them.
func (c *Client) RunDetail(ctx context.Context, req RunsGetRequest) (*RunDetail[Step], error) {
	var d RunDetail[Step]
	err := c.Call(ctx, MethodRunsGet, req, &d)
	if errors.Is(err, ErrNotFound) && req.ID != "" && len(req.ID) < fullIDLen {
		full, ferr := c.runByEnd(ctx, req.ID)
		switch {
		case ferr == nil:
			req.ID = full
			err = c.Call(ctx, MethodRunsGet, req, &d)
		case errors.Is(ferr, ErrAmbiguous):
			return nil, ferr
		}
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// fullIDLen is the length of a run id (a UUID's text): one that long is
// not looked for by its end.
const fullIDLen = 36

// runByEnd is the id of the only one of the newest SuffixWindow runs whose
// id ends with end.
func (c *Client) runByEnd(ctx context.Context, end string) (string, error) {
	var ids []string
	if _, err := c.RunsListAll(ctx, RunsListRequest{}, SuffixWindow, func(s RunSummary) error {
		if strings.HasSuffix(s.ID, end) {
			ids = append(ids, s.ID)
		}
		return nil
	}); err != nil {
		return "", err
	}
	id, _, err := ResolveID("run", ids, end)
	return id, err
}

// RunSummary returns the summary of the run with id or unique id prefix
// id: what a poller asks for, at a cost that does not grow with the run.
func (c *Client) RunSummary(ctx context.Context, id string) (*RunSummary, error) {
	d, err := c.RunDetail(ctx, RunsGetRequest{ID: id, Summary: true})
	if err != nil {
		return nil, err
	}
	return &d.Run, nil
}

// RunsSteps returns one page of a run's steps, in plan order.
func (c *Client) RunsSteps(ctx context.Context, req RunsStepsRequest) (*Page[Step], error) {
	var p Page[Step]
	if err := c.Call(ctx, MethodRunsSteps, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// RunsGet returns the run with id or unique id prefix id and every one of
// its steps, following the pages of runs.steps after runs.get's first.
func (c *Client) RunsGet(ctx context.Context, id string) (*Run, error) {
	d, err := c.RunDetail(ctx, RunsGetRequest{ID: id})
	if err != nil {
		return nil, err
	}
	run := runOf(d.Run)
	if d.Steps == nil {
		return nil, fmt.Errorf("api: %s %s: the answer has no steps", MethodRunsGet, d.Run.ID)
	}
	run.Steps = append(make([]Step, 0, max(d.Run.Steps, len(d.Steps.Items))), d.Steps.Items...)
	if d.Steps.End {
		return run, nil
	}
	for st, err := range Walk(ctx, d.Steps.Next, func(ctx context.Context, cursor string) (*Page[Step], error) {
		return c.RunsSteps(ctx, RunsStepsRequest{ID: d.Run.ID, Cursor: cursor, Limit: MaxStepsPage})
	}) {
		if err != nil {
			return nil, fmt.Errorf("api: steps of run %s: %w", d.Run.ID, err)
		}
		run.Steps = append(run.Steps, st)
	}
	return run, nil
}

// runOf is the Run of a summary, without steps.
func runOf(s RunSummary) *Run {
	return &Run{ID: s.ID, Goal: s.Goal, Status: s.Status, Reason: s.Reason, Revision: s.Revision,
		CreatedAt: s.CreatedAt, FinishedAt: s.FinishedAt, Steps: []Step{}, Code: s.Code,
		Ratings: s.Ratings, RatingsMore: s.RatingsMore}
}
