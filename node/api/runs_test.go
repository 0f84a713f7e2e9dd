package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// pagedRuns serves n runs in pages of at most size, numbering cursors by
// position; broken makes a page that is not the end come without a cursor.
func pagedRuns(t *testing.T, n, size int, broken bool) (*Client, *[]RunsListRequest) {
	t.Helper()
	srv, c := newPair(t)
	var got []RunsListRequest
	HandleTyped(srv, MethodRunsList, func(_ context.Context, req RunsListRequest) (Page[RunSummary], error) {
		got = append(got, req)
		from := 0
		for _, c := range []string{req.After, req.Cursor} {
			if c == "" {
				continue
			}
			i, err := strconv.Atoi(c)
			if err != nil {
				return Page[RunSummary]{}, WithHint(fmt.Errorf("%w: cursor %q", ErrBadRequest, c), "use a page's next")
			}
			from = i + 1
		}
		lim := min(size, PageLimit(req.Limit, DefaultRunsPage, MaxRunsPage))
		p := Page[RunSummary]{Items: []RunSummary{}}
		for i := from; i < n && len(p.Items) < lim; i++ {
			p.Items = append(p.Items, RunSummary{ID: fmt.Sprint("r", i)})
		}
		last := from + len(p.Items) - 1
		p.End = last >= n-1
		if !p.End && !broken {
			p.Next = strconv.Itoa(last)
		}
		return p, nil
	})
	HandleTyped(srv, MethodRunsGet, func(_ context.Context, req RunsGetRequest) (RunDetail[Step], error) {
		d := RunDetail[Step]{Run: RunSummary{ID: req.ID, Steps: n}}
		if !req.Summary {
			d.Steps = &Page[Step]{Items: []Step{{ID: "s0"}}, Next: "0", End: n == 1}
		}
		return d, nil
	})
	HandleTyped(srv, MethodRunsSteps, func(_ context.Context, req RunsStepsRequest) (Page[Step], error) {
		after, err := ParseStepCursor(req.Cursor)
		if err != nil {
			return Page[Step]{}, err
		}
		p := Page[Step]{Items: []Step{}}
		for i := after + 1; i < n && len(p.Items) < size; i++ {
			p.Items = append(p.Items, Step{ID: fmt.Sprint("s", i)})
		}
		last := after + len(p.Items)
		p.End = last >= n-1
		if !p.End {
			p.Next = StepCursor(last)
		}
		return p, nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	return c, &got
}

func TestRunsListAll(t *testing.T) {
	c, got := pagedRuns(t, 10, 3, false)
	ctx := context.Background()
	var ids []string
	collect := func(s RunSummary) error { ids = append(ids, s.ID); return nil }

	next, err := c.RunsListAll(ctx, RunsListRequest{Status: "running"}, 7, collect)
	if err != nil || fmt.Sprint(ids) != "[r0 r1 r2 r3 r4 r5 r6]" || next != "6" {
		t.Fatalf("first 7: %v next %q %v", ids, next, err)
	}
	// Each request asks for what is still wanted, with the filters kept.
	if len(*got) != 3 || (*got)[2].Limit != 1 || (*got)[2].Cursor != "5" || (*got)[2].Status != "running" {
		t.Errorf("requests %+v", *got)
	}
	ids = nil
	next, err = c.RunsListAll(ctx, RunsListRequest{Cursor: next}, 0, collect)
	if err != nil || fmt.Sprint(ids) != "[r7 r8 r9]" || next != "" {
		t.Fatalf("the rest: %v next %q %v", ids, next, err)
	}
	// Exactly as many as there are: the end, not a cursor.
	ids = nil
	if next, err = c.RunsListAll(ctx, RunsListRequest{}, 10, collect); err != nil || len(ids) != 10 || next != "" {
		t.Fatalf("all 10 with limit 10: %v next %q %v", ids, next, err)
	}
	// The node's error reaches the caller.
	if _, err := c.RunsListAll(ctx, RunsListRequest{After: "x"}, 0, collect); !errors.Is(err, ErrBadRequest) || HintOf(err) == "" {
		t.Errorf("bad cursor: %v", err)
	}
	// So does fn's, and it stops the listing.
	stop := errors.New("stop")
	if _, err := c.RunsListAll(ctx, RunsListRequest{}, 0, func(RunSummary) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn error: %v", err)
	}
}

func TestRunsListAllRefusesAPageWithoutCursor(t *testing.T) {
	c, _ := pagedRuns(t, 10, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n := 0
	_, err := c.RunsListAll(ctx, RunsListRequest{}, 0, func(RunSummary) error { n++; return nil })
	if err == nil || n != 3 || ctx.Err() != nil {
		t.Fatalf("a page that is not the end without a cursor: %d runs, %v", n, err)
	}
}

func TestRunsGetFollowsSteps(t *testing.T) {
	c, _ := pagedRuns(t, 11, 4, false)
	run, err := c.RunsGet(context.Background(), "r")
	if err != nil || len(run.Steps) != 11 {
		t.Fatalf("RunsGet: %+v %v", run, err)
	}
	for i, s := range run.Steps {
		if s.ID != fmt.Sprint("s", i) {
			t.Fatalf("step %d is %s", i, s.ID)
		}
	}
	s, err := c.RunSummary(context.Background(), "r")
	if err != nil || s.Steps != 11 {
		t.Fatalf("RunSummary: %+v %v", s, err)
	}
}

func TestRunRequestChecks(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		req     RunsListRequest
		wantErr bool
	}{
		{RunsListRequest{}, false},
		{RunsListRequest{Status: "running", Limit: 5, Since: now.Add(-time.Hour), Until: now}, false},
		{RunsListRequest{Status: "lost"}, true},
		{RunsListRequest{Limit: -1}, true},
		{RunsListRequest{Since: now, Until: now}, true},
	} {
		err := tt.req.Validate()
		if (err != nil) != tt.wantErr || err != nil && (!errors.Is(err, ErrBadRequest) || HintOf(err) == "") {
			t.Errorf("Validate(%+v) = %v", tt.req, err)
		}
	}
	for c, want := range map[string]int{"": -1, "0": 0, "41": 41} {
		if got, err := ParseStepCursor(c); err != nil || got != want {
			t.Errorf("ParseStepCursor(%q) = %d, %v", c, got, err)
		}
	}
	for _, c := range []string{"-1", "x", "01", "1e3", " 1"} {
		if _, err := ParseStepCursor(c); !errors.Is(err, ErrBadRequest) {
			t.Errorf("ParseStepCursor(%q) = %v, want ErrBadRequest", c, err)
		}
	}
	if got, err := ParseTime("2h", now); err != nil || !got.Equal(now.Add(-2*time.Hour)) {
		t.Errorf("ParseTime(2h) = %v %v", got, err)
	}
	if got, err := ParseTime("2026-02-01T10:00:00Z", now); err != nil || got.Month() != 2 {
		t.Errorf("ParseTime(RFC 3339) = %v %v", got, err)
	}
	for _, s := range []string{"yesterday", "-2h", ""} {
		if _, err := ParseTime(s, now); err == nil {
			t.Errorf("ParseTime(%q) accepted", s)
		}
	}
	if PageLimit(0, 10, 50) != 10 || PageLimit(500, 10, 50) != 50 || PageLimit(7, 10, 50) != 7 {
		t.Error("PageLimit")
	}
}
