package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentic-dev/agentic/node/api"
)

// The fake node's run methods page the way a node does: runs.list newest
// first in pages of pageSize with cursors (a run's index in f.runs),
// runs.get with a first page of steps, runs.steps for the rest.

func (f *fakeNode) registerRuns(s *api.Server) {
	api.HandleTyped(s, api.MethodRunsList, f.runsList)
	api.HandleTyped(s, api.MethodRunsGet, f.runsGet)
	api.HandleTyped(s, api.MethodRunsSteps, f.runsSteps)
}

// requests is how many requests of method the node answered.
func (f *fakeNode) requests(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runRequests[method]
}

func (f *fakeNode) size(limit int) int {
	n := f.pageSize
	if n <= 0 {
		n = 2
	}
	if limit > 0 {
		n = min(n, limit)
	}
	return n
}

func cursorIndex(c string, n int) (int, error) {
	i, err := strconv.Atoi(c)
	if err != nil || i < 0 || i >= n {
		return 0, api.WithHint(fmt.Errorf("%w: bad cursor %q", api.ErrBadRequest, c), "use a cursor a listing gave")
	}
	return i, nil
}

func (f *fakeNode) runsList(_ context.Context, req api.RunsListRequest) (api.Page[api.RunSummary], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runRequests[api.MethodRunsList]++
	if err := req.Validate(); err != nil {
		return api.Page[api.RunSummary]{}, err
	}
	match := func(r api.Run) bool {
		return (req.Status == "" || string(r.Status) == req.Status) &&
			strings.Contains(strings.ToLower(r.Goal), strings.ToLower(req.Goal)) &&
			(req.Since.IsZero() || !r.CreatedAt.Before(req.Since)) && (req.Until.IsZero() || r.CreatedAt.Before(req.Until))
	}
	// f.runs is newest first: older runs have higher indexes.
	idx := make([]int, len(f.runs))
	for i := range idx {
		idx[i] = i
	}
	lo, hi := 0, len(f.runs) // runs considered: lo <= i < hi
	backwards := req.Before != ""
	switch {
	case req.Cursor == "":
	case backwards:
		req.Before = req.Cursor
	default:
		req.After = req.Cursor
	}
	if req.After != "" {
		a, err := cursorIndex(req.After, len(f.runs))
		if err != nil {
			return api.Page[api.RunSummary]{}, err
		}
		lo = a + 1
	}
	if backwards {
		b, err := cursorIndex(req.Before, len(f.runs))
		if err != nil {
			return api.Page[api.RunSummary]{}, err
		}
		hi = b
		slices.Reverse(idx) // nearest (oldest) first
	}
	page := api.Page[api.RunSummary]{Items: []api.RunSummary{}, End: true}
	n, last := f.size(req.Limit), ""
	for _, i := range idx {
		if i < lo || i >= hi || !match(f.runs[i]) {
			continue
		}
		if len(page.Items) == n {
			page.End, page.Next = false, last
			break
		}
		page.Items = append(page.Items, summaryOf(f.runs[i]))
		last = strconv.Itoa(i)
	}
	if backwards {
		slices.Reverse(page.Items)
	}
	return page, nil
}

// summaryOf is the summary a node keeps of r.
func summaryOf(r api.Run) api.RunSummary {
	s := api.RunSummary{ID: r.ID, Goal: r.Goal, Status: r.Status, Reason: r.Reason, Revision: r.Revision,
		Steps: len(r.Steps), StepCounts: map[string]int{}, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
	for _, st := range r.Steps {
		s.StepCounts[st.Status]++
	}
	return s
}

// run finds a run by id or prefix, or asks progress; the lock is held.
func (f *fakeNode) run(id string) (*api.Run, error) {
	ids := make([]string, len(f.runs))
	for i, r := range f.runs {
		ids[i] = r.ID
	}
	full, err := api.MatchID("run", ids, id)
	if err == nil {
		return &f.runs[slices.Index(ids, full)], nil
	}
	if f.progress != nil {
		n := f.calls[id]
		f.calls[id]++
		return f.progress(id, n)
	}
	return nil, err
}

func (f *fakeNode) runsGet(_ context.Context, req api.RunsGetRequest) (*api.RunDetail[api.Step], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runRequests[api.MethodRunsGet]++
	r, err := f.run(req.ID)
	if err != nil {
		return nil, err
	}
	d := &api.RunDetail[api.Step]{Run: summaryOf(*r)}
	if !req.Summary {
		p := f.stepsPage(r, -1, req.Limit)
		d.Steps = &p
	}
	return d, nil
}

func (f *fakeNode) runsSteps(_ context.Context, req api.RunsStepsRequest) (api.Page[api.Step], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runRequests[api.MethodRunsSteps]++
	after, err := api.ParseStepCursor(req.Cursor)
	if err != nil {
		return api.Page[api.Step]{}, err
	}
	r, err := f.run(req.ID)
	if err != nil {
		return api.Page[api.Step]{}, err
	}
	return f.stepsPage(r, after, req.Limit), nil
}

func (f *fakeNode) stepsPage(r *api.Run, after, limit int) api.Page[api.Step] {
	from := after + 1
	to := min(len(r.Steps), from+f.size(limit))
	if from >= to {
		return api.Page[api.Step]{Items: []api.Step{}, End: true}
	}
	p := api.Page[api.Step]{Items: slices.Clone(r.Steps[from:to]), End: to == len(r.Steps)}
	if !p.End {
		p.Next = api.StepCursor(to - 1)
	}
	return p
}
