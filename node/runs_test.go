package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

const noopPlan = "goal: noop\nsteps:\n  - id: a\n    kind: noop\n"

// submitGoal publishes a goal.submitted with goal as its text and the plan
// file, and returns the run id.
func submitGoal(t testing.TB, n *nodetest.Node, goal, planFile string) string {
	t.Helper()
	run, err := publishGoal(n, goal, planFile)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func publishGoal(n *nodetest.Node, goal, planFile string) (string, error) {
	run := event.NewID()
	d := event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: goal, PlanFile: planFile, PlanName: "plan.yaml"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return run, bus.PublishSigned(ctx, n.JS, n.Operator, d)
}

// bigGoal is a goal text of about 16 KiB, numbered.
func bigGoal(i int) string {
	return fmt.Sprintf("goal %04d: ", i) + strings.Repeat("keep the history small ", 700)
}

// waitFinished polls the summaries of runs until every one has finished.
func waitFinished(t testing.TB, n *nodetest.Node, runs []string) {
	t.Helper()
	for _, id := range runs {
		poll.Eventually(t, 60*time.Second, "run "+id+" finished", func() bool {
			s, err := n.API.RunSummary(context.Background(), id)
			return err == nil && (s.Status == event.RunSucceeded || s.Status == event.RunFailed)
		})
	}
}

// listAll follows runs.list pages and returns every summary and the number
// of pages.
func listAll(t testing.TB, c *api.Client, req api.RunsListRequest) ([]api.RunSummary, int) {
	t.Helper()
	var out []api.RunSummary
	pages := 0
	for {
		p, err := c.RunsList(context.Background(), req)
		if err != nil {
			t.Fatalf("runs.list page %d: %v", pages+1, err)
		}
		pages++
		out = append(out, p.Items...)
		if p.End {
			return out, pages
		}
		if p.Next == "" || pages > 10_000 {
			t.Fatalf("page %d: not the end and no next cursor", pages)
		}
		req.Cursor = p.Next
	}
}

// checkListing asserts that got is in listing order (newest first by
// created_at, then id) without repeats and holds every run of want once.
func checkListing(t testing.TB, got []api.RunSummary, want []string) {
	t.Helper()
	seen := map[string]int{}
	for i, s := range got {
		seen[s.ID]++
		if seen[s.ID] > 1 {
			t.Fatalf("run %s listed twice", s.ID)
		}
		if i > 0 {
			p := got[i-1]
			if c := p.CreatedAt.Compare(s.CreatedAt); c < 0 || c == 0 && p.ID <= s.ID {
				t.Fatalf("listing out of order at %d: %s (%s) before %s (%s)", i, p.ID, p.CreatedAt, s.ID, s.CreatedAt)
			}
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Fatalf("run %s listed %d times, want once", id, seen[id])
		}
	}
}

// More runs than one reply can carry: every page fits, paging returns every
// run that existed when it began exactly once and in order while new runs
// are submitted, through the query API and through /api/runs.
func TestRunsListPagesUnderMaxPayload(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	ctx := context.Background()
	var before []string
	for i := range 100 {
		before = append(before, submitGoal(t, n, bigGoal(i), noopPlan))
	}
	waitFinished(t, n, before)

	// Submit new runs for as long as the listings below run.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var added []string
	var addErr error
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id, err := publishGoal(n, bigGoal(i), noopPlan)
			if err != nil {
				addErr = err
				return
			}
			added = append(added, id)
			if len(added) == 1 {
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("no run submitted")
	}
	all, pages := listAll(t, n.API, api.RunsListRequest{})
	var web []api.RunSummary
	next := "http://" + n.HTTPAddr() + "/api/runs"
	for webPages := 0; next != ""; webPages++ {
		var p api.Page[api.RunSummary]
		resp := getJSON(t, next, &p)
		if resp.StatusCode != 200 || webPages > 1000 {
			t.Fatalf("GET %s: %d", next, resp.StatusCode)
		}
		web = append(web, p.Items...)
		next = ""
		if link := resp.Header.Get("Link"); !p.End {
			u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
			if err != nil || u.Query().Get("cursor") != p.Next {
				t.Fatalf("Link %q for next %q", link, p.Next)
			}
			next = "http://" + n.HTTPAddr() + u.String()
		}
	}
	close(stop)
	wg.Wait()
	if addErr != nil || len(added) == 0 {
		t.Fatalf("submitting while listing: %d runs, %v", len(added), addErr)
	}

	checkListing(t, all, before)
	checkListing(t, web, before)
	size := 0
	for _, s := range all {
		b, _ := json.Marshal(s)
		size += len(b)
	}
	if int64(size) <= n.NC.MaxPayload() || pages < 2 {
		t.Fatalf("%d runs in %d pages, %d bytes: the test needs more than one reply's worth (%d)", len(all), pages, size, n.NC.MaxPayload())
	}

	// Filters: a goal substring (ignoring case), a status, a time window.
	got, _ := listAll(t, n.API, api.RunsListRequest{Goal: "GOAL 0042:"})
	if len(got) != 1 || got[0].ID != before[42] {
		t.Errorf("goal filter: %d runs %v, want %s", len(got), got, before[42])
	}
	if got, _ := listAll(t, n.API, api.RunsListRequest{Status: string(event.RunCancelled)}); len(got) != 0 {
		t.Errorf("status cancelled: %d runs", len(got))
	}
	s10, err := n.API.RunSummary(ctx, before[10])
	if err != nil {
		t.Fatal(err)
	}
	s20, err := n.API.RunSummary(ctx, before[20])
	if err != nil {
		t.Fatal(err)
	}
	got, _ = listAll(t, n.API, api.RunsListRequest{Since: s10.CreatedAt, Until: s20.CreatedAt})
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	want := slices.Clone(before[10:20])
	slices.Reverse(want)
	if !slices.Equal(ids, want) {
		t.Errorf("since run 10 until run 20: %v, want %v", ids, want)
	}

	// Before: the runs newer than a cursor, each page newest first, next
	// going on towards newer runs.
	p, err := n.API.RunsList(ctx, api.RunsListRequest{Since: s10.CreatedAt, Until: s20.CreatedAt, Limit: 4})
	if err != nil || p.End || len(p.Items) != 4 {
		t.Fatalf("first page of 4: %+v %v", p, err)
	}
	older, err := n.API.RunsList(ctx, api.RunsListRequest{Since: s10.CreatedAt, Until: s20.CreatedAt, After: p.Next, Limit: 3})
	if err != nil || len(older.Items) != 3 {
		t.Fatalf("second page of 3: %+v %v", older, err)
	}
	newer, err := n.API.RunsList(ctx, api.RunsListRequest{Since: s10.CreatedAt, Until: s20.CreatedAt, Before: older.Next, Limit: 3})
	if err != nil || len(newer.Items) != 3 || newer.End {
		t.Fatalf("before the second page's end: %+v %v", newer, err)
	}
	// older is runs 15, 14, 13 of the window; before 13 come 14, 15, 16.
	if newer.Items[0].ID != p.Items[3].ID || newer.Items[1].ID != older.Items[0].ID || newer.Items[2].ID != older.Items[1].ID {
		t.Errorf("before %q: %v, want the two runs before it and the last of the first page, newest first", older.Next, newer.Items)
	}
}

func getJSON(t testing.TB, u string, v any) *http.Response {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %d: %v", u, resp.StatusCode, err)
	}
	return resp
}

// wideNoop is a plan of n independent noop steps s0…s(n-1).
func wideNoop(n int) string {
	var b strings.Builder
	b.WriteString("goal: wide\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: s%d, kind: noop}\n", i)
	}
	return b.String()
}

// A run whose steps do not fit one reply: runs.get gives the summary and a
// first page, runs.steps the rest, exactly, in plan order; the client's
// RunsGet puts them together. Unknown runs and bad cursors are errors
// that reach the caller, over NATS and HTTP.
func TestRunStepsPages(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	ctx := context.Background()
	const steps = 6000
	run := submitGoal(t, n, "wide", wideNoop(steps))
	r := n.WaitRun(t, run, 2*time.Minute)
	if r.Status != event.RunSucceeded || len(r.Steps) != steps {
		t.Fatalf("run: %s with %d steps, want succeeded with %d", r.Status, len(r.Steps), steps)
	}
	for i, s := range r.Steps {
		if s.ID != fmt.Sprintf("s%d", i) || s.Status != "succeeded" {
			t.Fatalf("step %d: %s %s", i, s.ID, s.Status)
		}
	}
	if b, _ := json.Marshal(r); int64(len(b)) <= n.NC.MaxPayload() {
		t.Fatalf("the run is %d bytes: the test needs more than one reply's worth", len(b))
	}

	d, err := n.API.RunDetail(ctx, api.RunsGetRequest{ID: run[:10], Limit: 700})
	if err != nil || d.Run.ID != run || d.Run.Steps != steps || d.Run.StepCounts["succeeded"] != steps || d.Steps == nil ||
		len(d.Steps.Items) != 700 || d.Steps.End || d.Steps.Next == "" {
		t.Fatalf("runs.get: %+v %v", d, err)
	}
	got := slices.Clone(d.Steps.Items)
	for cursor := d.Steps.Next; cursor != ""; {
		p, err := n.API.RunsSteps(ctx, api.RunsStepsRequest{ID: run, Cursor: cursor, Limit: 999})
		if err != nil || len(p.Items) > 999 {
			t.Fatalf("runs.steps after %s: %d items, %v", cursor, len(p.Items), err)
		}
		got = append(got, p.Items...)
		cursor = p.Next
		if p.End != (cursor == "") {
			t.Fatalf("runs.steps: end %v with next %q", p.End, cursor)
		}
	}
	if len(got) != steps {
		t.Fatalf("paged %d steps, want %d", len(got), steps)
	}
	for i := range got {
		if got[i].ID != r.Steps[i].ID {
			t.Fatalf("paged step %d is %s, want %s", i, got[i].ID, r.Steps[i].ID)
		}
	}
	sum, err := n.API.RunSummary(ctx, run)
	if err != nil || sum.ID != run || sum.Steps != steps {
		t.Fatalf("summary: %+v %v", sum, err)
	}
	if p, err := n.API.RunsSteps(ctx, api.RunsStepsRequest{ID: run, Cursor: api.StepCursor(steps + 5)}); err != nil || !p.End || len(p.Items) != 0 {
		t.Errorf("steps after the last: %+v %v", p, err)
	}

	// Errors reach the caller as errors, never as timeouts.
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"unknown run", func() error { _, err := n.API.RunsGet(ctx, "ffffffff"); return err }, api.ErrNotFound},
		{"unknown run's summary", func() error { _, err := n.API.RunSummary(ctx, "ffffffff"); return err }, api.ErrNotFound},
		{"unknown run's steps", func() error {
			_, err := n.API.RunsSteps(ctx, api.RunsStepsRequest{ID: "ffffffff"})
			return err
		}, api.ErrNotFound},
		{"bad list cursor", func() error { _, err := n.API.RunsList(ctx, api.RunsListRequest{After: "not a cursor"}); return err }, api.ErrBadRequest},
		{"bad page cursor", func() error { _, err := n.API.RunsList(ctx, api.RunsListRequest{Cursor: "%%%"}); return err }, api.ErrBadRequest},
		{"bad before cursor", func() error { _, err := n.API.RunsList(ctx, api.RunsListRequest{Before: "%%%"}); return err }, api.ErrBadRequest},
		{"bad status", func() error { _, err := n.API.RunsList(ctx, api.RunsListRequest{Status: "lost"}); return err }, api.ErrBadRequest},
		{"bad steps cursor", func() error {
			_, err := n.API.RunsSteps(ctx, api.RunsStepsRequest{ID: run, Cursor: "-4"})
			return err
		}, api.ErrBadRequest},
	} {
		err := c.call()
		if !errors.Is(err, c.want) || errors.Is(err, api.ErrTimeout) || api.HintOf(err) == "" {
			t.Errorf("%s: %v (hint %q), want %v with a hint", c.name, err, api.HintOf(err), c.want)
		}
	}
	base := "http://" + n.HTTPAddr()
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/api/runs/ffffffff", 404, api.CodeNotFound},
		{"/api/runs?cursor=not-a-cursor", 400, api.CodeBadRequest},
		{"/api/runs?status=lost", 400, api.CodeBadRequest},
		{"/api/runs/" + run + "/steps?cursor=x", 400, api.CodeBadRequest},
	} {
		var e struct{ Error, Hint, Code string }
		if resp := getJSON(t, base+c.path, &e); resp.StatusCode != c.status || e.Code != c.code || e.Error == "" || e.Hint == "" {
			t.Errorf("GET %s: %d %+v, want %d %s with a hint", c.path, resp.StatusCode, e, c.status, c.code)
		}
	}
	var hd api.RunDetail[api.Step]
	if resp := getJSON(t, base+"/api/runs/"+run[:8], &hd); resp.StatusCode != 200 || hd.Run.ID != run || hd.Steps == nil ||
		len(hd.Steps.Items) == 0 || !strings.Contains(resp.Header.Get("Link"), "/api/runs/"+run+"/steps?cursor=") {
		t.Errorf("GET /api/runs/{prefix}: %d %+v Link %q", resp.StatusCode, hd.Run, resp.Header.Get("Link"))
	}

	// node.info names the leader from the run index.
	info := n.Info()
	if info.Leader != n.Config().Name || info.Epoch == 0 {
		t.Errorf("node info leader %q epoch %d", info.Leader, info.Epoch)
	}
}
