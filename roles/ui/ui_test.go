package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/ui"
)

// runs is a read model over fixed summaries, paged by position: a cursor is
// the index of the last run of the page before.
type runs struct {
	list []api.RunSummary
	got  api.RunsListRequest
}

func (r *runs) List(_ context.Context, req api.RunsListRequest) (api.Page[json.RawMessage], error) {
	r.got = req
	if err := req.Validate(); err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	from := 0
	if req.Cursor != "" {
		if _, err := fmt.Sscan(req.Cursor, &from); err != nil {
			return api.Page[json.RawMessage]{}, fmt.Errorf("%w: bad cursor %q", api.ErrBadRequest, req.Cursor)
		}
		from++
	}
	p := api.NewPager(api.PageLimit(req.Limit, 2, 2), 1<<20)
	for i := from; i < len(r.list); i++ {
		if req.Status != "" && string(r.list[i].Status) != req.Status {
			continue
		}
		if ok, _ := p.Add(r.list[i]); !ok {
			return p.Page(fmt.Sprint(i-1), false), nil
		}
	}
	return p.Page("", true), nil
}

func (r *runs) Get(_ context.Context, req api.RunsGetRequest) (api.RunDetail[json.RawMessage], error) {
	for _, s := range r.list {
		if s.ID == req.ID {
			step, _ := json.Marshal(api.Step{ID: "only", Status: "running"})
			return api.RunDetail[json.RawMessage]{Run: s, Steps: &api.Page[json.RawMessage]{Items: []json.RawMessage{step}, Next: "0"}}, nil
		}
	}
	return api.RunDetail[json.RawMessage]{}, api.WithHint(fmt.Errorf("%w: no run matches %q", api.ErrNotFound, req.ID), "list them")
}

func (r *runs) Steps(_ context.Context, req api.RunsStepsRequest) (api.Page[json.RawMessage], error) {
	if _, err := api.ParseStepCursor(req.Cursor); err != nil {
		return api.Page[json.RawMessage]{}, err
	}
	if req.ID == "amb" {
		return api.Page[json.RawMessage]{}, fmt.Errorf("%w: amb", api.ErrAmbiguous)
	}
	return api.Page[json.RawMessage]{Items: []json.RawMessage{}, End: true}, nil
}

func TestRunsAPI(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	model := &runs{}
	for i, st := range []string{"running", "failed", "succeeded"} {
		model.list = append(model.list, api.RunSummary{ID: fmt.Sprint("r", i), Status: event.RunStatus(st), Steps: 2,
			StepCounts: map[string]int{"succeeded": 1, "pending": 1}, CreatedAt: t0.Add(-time.Duration(i) * time.Hour)})
	}
	mux := http.NewServeMux()
	ui.New(model).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string, v any) *http.Response {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: content type %q", path, resp.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp
	}

	// The first page links to the next; following the links reads every run once.
	var seen []string
	next := "/api/runs?status=&goal=deploy&since=2h"
	for pages := 0; next != ""; pages++ {
		var p api.Page[api.RunSummary]
		resp := get(next, &p)
		if resp.StatusCode != 200 || pages > 3 {
			t.Fatalf("GET %s: %d %+v", next, resp.StatusCode, p)
		}
		for _, r := range p.Items {
			seen = append(seen, r.ID)
		}
		next = ""
		link := resp.Header.Get("Link")
		if p.End != (link == "") {
			t.Fatalf("GET %s: end %v with Link %q", next, p.End, link)
		}
		if !p.End {
			u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
			if err != nil || u.Query().Get("cursor") != p.Next || u.Query().Get("goal") != "deploy" {
				t.Fatalf("Link %q for next %q", link, p.Next)
			}
			next = u.String()
		}
	}
	if strings.Join(seen, ",") != "r0,r1,r2" {
		t.Errorf("paged through %v", seen)
	}
	if model.got.Goal != "deploy" || model.got.Since.IsZero() || time.Since(model.got.Since) < 2*time.Hour-time.Minute {
		t.Errorf("request %+v: want goal and since 2h ago", model.got)
	}

	var d api.RunDetail[api.Step]
	if resp := get("/api/runs/r1", &d); resp.StatusCode != 200 || d.Run.Status != "failed" || d.Steps == nil || len(d.Steps.Items) != 1 ||
		!strings.Contains(resp.Header.Get("Link"), "/api/runs/r1/steps?cursor=0") {
		t.Fatalf("get r1: %d %+v Link %q", resp.StatusCode, d, resp.Header.Get("Link"))
	}

	for _, c := range []struct {
		path, code string
		status     int
	}{
		{"/api/runs/zzz", api.CodeNotFound, 404},
		{"/api/runs?status=bogus", api.CodeBadRequest, 400},
		{"/api/runs?limit=-1", api.CodeBadRequest, 400},
		{"/api/runs?limit=many", api.CodeBadRequest, 400},
		{"/api/runs?since=yesterday", api.CodeBadRequest, 400},
		{"/api/runs?cursor=%21", api.CodeBadRequest, 400},
		{"/api/runs/r1/steps?cursor=-3", api.CodeBadRequest, 400},
		{"/api/runs/amb/steps", api.CodeAmbiguous, 409},
	} {
		var e struct{ Error, Hint, Code string }
		if resp := get(c.path, &e); resp.StatusCode != c.status || e.Code != c.code || e.Error == "" {
			t.Errorf("GET %s: %d %+v, want %d %s", c.path, resp.StatusCode, e, c.status, c.code)
		}
	}
	var empty api.Page[api.RunSummary]
	if resp := get("/api/runs?status=cancelled", &empty); resp.StatusCode != 200 || empty.Items == nil || !empty.End {
		t.Fatalf("empty list must be items [] and end: %d %+v", resp.StatusCode, empty)
	}
}
