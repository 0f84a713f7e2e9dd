package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator/runindex"
)

// runReads answers the run queries — runs.list, runs.get, runs.steps, and
// the UI's /api/runs — from the run index on disk (runindex, written in
// the ledger's batches), never from a role's memory: a finished run is read
// the same way as a live one, and an answer costs what it holds. Every
// answer is a page cut by count and by encoded size under the max payload
// of the connection it goes out on (api.MaxPayload).
type runReads struct {
	x *runindex.Index
}

// List answers a page of run summaries.
func (r runReads) List(ctx context.Context, req api.RunsListRequest) (api.Page[json.RawMessage], error) {
	if err := req.Validate(); err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	for _, c := range []struct{ name, cursor string }{{"after", req.After}, {"before", req.Before}, {"cursor", req.Cursor}} {
		if c.cursor == "" {
			continue
		}
		if err := runindex.ValidCursor(c.cursor); err != nil {
			return api.Page[json.RawMessage]{}, runCursorError(c.name, err)
		}
	}
	q := runindex.Query{Status: req.Status, Goal: req.Goal, Since: req.Since, Until: req.Until, After: req.After, Before: req.Before}
	switch {
	case req.Cursor == "":
	case req.Before != "":
		q.Before = req.Cursor
	default:
		q.After = req.Cursor
	}
	p := api.NewPager(api.PageLimit(req.Limit, api.DefaultRunsPage, api.MaxRunsPage), api.MaxPayload(ctx))
	page, err := listPage(ctx, p, r.x.Runs(q))
	if err != nil {
		return page, err
	}
	if req.Before != "" {
		// The index lists runs newer than Before nearest first: the page
		// shows them newest first, like every other page.
		slices.Reverse(page.Items)
	}
	return page, nil
}

// listPage fills p from the listing. The page ends where the pager is full
// (with the cursor of its last run), at a scan checkpoint (with the
// checkpoint's cursor), or with the listing.
func listPage(ctx context.Context, p *api.Pager, runs iter.Seq2[runindex.Entry, error]) (api.Page[json.RawMessage], error) {
	last := ""
	for e, err := range runs {
		if err != nil {
			return api.Page[json.RawMessage]{}, runError("", err)
		}
		if err := ctx.Err(); err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: runs.list: %w", err)
		}
		if e.Summary == nil {
			return p.Page(e.Cursor, false), nil
		}
		ok, err := p.Add(e.Summary)
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: run %s: %w", e.Summary.ID, err)
		}
		if !ok {
			return p.Page(last, false), nil
		}
		last = e.Cursor
	}
	return p.Page("", true), nil
}

// Get answers a run's summary and the first page of its steps.
func (r runReads) Get(ctx context.Context, req api.RunsGetRequest) (api.RunDetail[json.RawMessage], error) {
	sum, err := r.x.Run(req.ID)
	if err != nil {
		return api.RunDetail[json.RawMessage]{}, runError(req.ID, err)
	}
	if sum.Ratings, sum.RatingsMore, err = r.x.Ratings(sum.ID, 0); err != nil {
		return api.RunDetail[json.RawMessage]{}, runError(sum.ID, err)
	}
	d := api.RunDetail[json.RawMessage]{Run: sum}
	if req.Summary {
		return d, nil
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return d, fmt.Errorf("node: encode run %s: %w", sum.ID, err)
	}
	page, err := r.steps(ctx, sum.ID, -1, req.Limit, api.MaxPayload(ctx)-int64(len(b)))
	if err != nil {
		return d, err
	}
	d.Steps = &page
	return d, nil
}

// Steps answers a page of a run's steps.
func (r runReads) Steps(ctx context.Context, req api.RunsStepsRequest) (api.Page[json.RawMessage], error) {
	after, err := api.ParseStepCursor(req.Cursor)
	if err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	sum, err := r.x.Run(req.ID)
	if err != nil {
		return api.Page[json.RawMessage]{}, runError(req.ID, err)
	}
	return r.steps(ctx, sum.ID, after, req.Limit, api.MaxPayload(ctx))
}

func (r runReads) steps(ctx context.Context, id string, after, limit int, maxPayload int64) (api.Page[json.RawMessage], error) {
	p := api.NewPager(api.PageLimit(limit, api.DefaultStepsPage, api.MaxStepsPage), maxPayload)
	last := after
	for st, err := range r.x.Steps(id, after) {
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: steps of run %s: %w", id, runError(id, err))
		}
		if err := ctx.Err(); err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: steps of run %s: %w", id, err)
		}
		ok, err := p.AddRaw(st.Raw)
		if err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("node: step %s of run %s: %w", st.View.ID, id, err)
		}
		if !ok {
			return p.Page(api.StepCursor(last), false), nil
		}
		last = st.Pos
	}
	return p.Page("", true), nil
}

// runError gives a run index error its API category and a hint.
func runError(id string, err error) error {
	var amb *runindex.AmbiguousError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &amb):
		total := len(amb.Candidates)
		if amb.More {
			total = 0 // the index stops counting past its candidates
		}
		return api.Ambiguous("run", amb.Prefix, amb.Candidates, total)
	case errors.Is(err, runindex.ErrAmbiguous):
		return api.WithHint(fmt.Errorf("%w: %w", api.ErrAmbiguous, err), "give more characters of the id")
	case errors.Is(err, runindex.ErrNotFound):
		return api.WithHint(fmt.Errorf("%w: no run matches %q", api.ErrNotFound, id), "list them with: agentctl run list")
	case errors.Is(err, runindex.ErrBadCursor):
		return runCursorError("cursor", err)
	}
	return fmt.Errorf("node: runs: %w", err)
}

func runCursorError(name string, err error) error {
	return api.WithHint(fmt.Errorf("%w: %s: %w", api.ErrBadRequest, name, err),
		"use a cursor a run listing gave (its \"next\", or the one agentctl prints after \"more:\")")
}
