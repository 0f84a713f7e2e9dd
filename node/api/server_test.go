package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/nats-io/nats.go"
)

func newPair(t *testing.T) (*Server, *Client) {
	t.Helper()
	url := startNATS(t)
	srv := NewServer(connect(t, url), "node-a", nil)
	t.Cleanup(srv.Stop)
	return srv, NewClient(connect(t, url), 2*time.Second)
}

func TestTypedRoundTrip(t *testing.T) {
	srv, c := newPair(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exit := 0
	run := Run{ID: "r1", Goal: "g", Status: "running", Revision: 1, CreatedAt: now,
		Steps: []Step{{ID: "build", Kind: "shell", Status: "succeeded", Attempt: 1, Node: "node-a", ExitCode: &exit}}}
	var gotList RunsListRequest
	sum := RunSummary{ID: run.ID, Goal: run.Goal, Status: run.Status, Revision: 1, Steps: 1, StepCounts: map[string]int{"succeeded": 1}, CreatedAt: now}
	HandleTyped(srv, MethodRunsList, func(_ context.Context, req RunsListRequest) (Page[RunSummary], error) {
		gotList = req
		return Page[RunSummary]{Items: []RunSummary{sum}, End: true}, nil
	})
	HandleTyped(srv, MethodRunsGet, func(_ context.Context, req RunsGetRequest) (*RunDetail[Step], error) {
		if req.ID != "r1" {
			return nil, fmt.Errorf("%w: run %q", ErrNotFound, req.ID)
		}
		return &RunDetail[Step]{Run: sum, Steps: &Page[Step]{Items: run.Steps, End: true}}, nil
	})
	HandleTyped(srv, MethodAudit, func(_ context.Context, req AuditRequest) (AuditPage, error) {
		return AuditPage{Head: 9, Page: Page[AuditLine]{Items: []AuditLine{{Seq: req.After + 1, Type: "goal.submitted", Run: req.Run, Data: json.RawMessage(`{"b":1,"goal":"g"}`), JWS: "a.b.c"}}}}, nil
	})
	HandleTyped(srv, MethodLedgerVerify, func(context.Context, struct{}) (VerifyResult, error) {
		return VerifyResult{OK: true, Events: 9, Head: "abc"}, nil
	})
	HandleTyped(srv, MethodMemoryGet, func(_ context.Context, req MemoryGetRequest) (Fact, error) {
		return Fact{Scope: req.Scope, Key: req.Key, Value: "v"}, nil
	})
	HandleTyped(srv, MethodMemoryList, func(_ context.Context, req MemoryListRequest) ([]Fact, error) {
		return []Fact{{Scope: req.Scope + "!", Key: "k"}}, nil
	})
	HandleTyped(srv, MethodNodeInfo, func(context.Context, struct{}) (NodeInfo, error) {
		return NodeInfo{ID: "node-a", Roles: []string{"ui"}, Version: "v1"}, nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("second Start = %v, want idempotent", err)
	}

	runs, err := c.RunsList(ctx, RunsListRequest{Status: "running", Limit: 3})
	if err != nil || !runs.End || len(runs.Items) != 1 || runs.Items[0].ID != "r1" || runs.Items[0].StepCounts["succeeded"] != 1 || !runs.Items[0].CreatedAt.Equal(now) {
		t.Fatalf("RunsList = %+v, %v", runs, err)
	}
	if gotList != (RunsListRequest{Status: "running", Limit: 3}) {
		t.Errorf("server got %+v", gotList)
	}
	if r, err := c.RunsGet(ctx, "r1"); err != nil || r.Goal != "g" || len(r.Steps) != 1 || *r.Steps[0].ExitCode != 0 {
		t.Fatalf("RunsGet = %+v, %v", r, err)
	}
	page, err := c.Audit(ctx, AuditRequest{After: 4, Run: "r1"})
	if err != nil || page.Head != 9 || len(page.Items) != 1 || page.Items[0].Seq != 5 || page.Items[0].Run != "r1" {
		t.Fatalf("Audit = %+v, %v", page, err)
	}
	if raw := page.Items[0].Data; string(raw) != `{"b":1,"goal":"g"}` {
		t.Errorf("audit data = %s, want the raw payload", raw)
	}
	if v, err := c.LedgerVerify(ctx); err != nil || !v.OK || v.Head != "abc" {
		t.Fatalf("LedgerVerify = %+v, %v", v, err)
	}
	if f, err := c.MemoryGet(ctx, "shared", "k"); err != nil || f.Scope != "shared" || f.Key != "k" || f.Value != "v" {
		t.Fatalf("MemoryGet = %+v, %v", f, err)
	}
	if fs, err := c.MemoryList(ctx, "s"); err != nil || len(fs) != 1 || fs[0].Scope != "s!" {
		t.Fatalf("MemoryList = %+v, %v", fs, err)
	}
	if n, err := c.NodeInfo(ctx); err != nil || n.ID != "node-a" || n.Version != "v1" {
		t.Fatalf("NodeInfo = %+v, %v", n, err)
	}
}

func TestErrorsCrossTheWire(t *testing.T) {
	srv, c := newPair(t)
	HandleTyped(srv, MethodRunsGet, func(_ context.Context, req RunsGetRequest) (*Run, error) {
		_, err := MatchID("run", []string{"0190aa", "0190ab"}, req.ID)
		return nil, err
	})
	srv.Handle(MethodNodeInfo, func(context.Context, json.RawMessage) (any, error) {
		return nil, &HintError{Err: errors.New("disk on fire"), Hint: "call the fire brigade"}
	})
	srv.Handle(MethodMemoryGet, func(context.Context, json.RawMessage) (any, error) { panic("boom") })
	HandleTyped(srv, MethodMemoryList, func(context.Context, MemoryListRequest) ([]Fact, error) { return nil, nil })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err := c.RunsGet(ctx, "0190a")
	var re *RemoteError
	if !errors.As(err, &re) || !errors.Is(err, ErrAmbiguous) || re.Node != "node-a" || re.Method != MethodRunsGet {
		t.Fatalf("ambiguous RunsGet = %#v", err)
	}
	if !strings.Contains(err.Error(), "\"0190a\" matches 2 runs:\n  0190aa\n  0190ab") || HintOf(err) != "give more characters of the id" {
		t.Errorf("ambiguous error = %q hint %q", err, HintOf(err))
	}
	if _, err = c.RunsGet(ctx, "ff"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrAmbiguous) {
		t.Errorf("missing RunsGet = %v, want ErrNotFound", err)
	}
	_, err = c.NodeInfo(ctx)
	if err == nil || err.Error() != "disk on fire" || HintOf(err) != "call the fire brigade" || errors.Is(err, ErrNotFound) {
		t.Errorf("NodeInfo = %v hint %q", err, HintOf(err))
	}
	// A panicking handler answers an error and the server keeps serving.
	if _, err = c.MemoryGet(ctx, "s", "k"); err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Errorf("panicking handler = %v", err)
	}
	if _, err := c.MemoryList(ctx, ""); err != nil {
		t.Errorf("after panic: %v", err)
	}
	// Undecodable request → bad request, the handler is not called.
	var out any
	err = c.Call(ctx, MethodRunsGet, json.RawMessage(`{"id": 7}`), &out)
	if !errors.Is(err, ErrBadRequest) {
		t.Errorf("bad request = %v", err)
	}
}

func TestNoResponders(t *testing.T) {
	url := startNATS(t)
	c := NewClient(connect(t, url), time.Second)
	_, err := c.RunsList(context.Background(), RunsListRequest{})
	want := "no agentd node answers agentic.api.runs.list on " + url + ": is agentd running? (start one with: agentd --data ./data)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrNoNode) {
		t.Errorf("err does not wrap ErrNoNode")
	}
}

func TestClientTimeoutAndCancel(t *testing.T) {
	srv, _ := newPair(t)
	release := make(chan struct{})
	srv.Handle(MethodNodeInfo, func(ctx context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return NodeInfo{}, nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer close(release)
	c := NewClient(srv.nc, 100*time.Millisecond)
	_, err := c.NodeInfo(context.Background())
	if !errors.Is(err, ErrTimeout) || HintOf(err) == "" {
		t.Fatalf("slow node = %v, want ErrTimeout with a hint", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewClient(srv.nc, time.Minute).NodeInfo(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx = %v", err)
	}
}

func TestAuditWaitExtendsTimeout(t *testing.T) {
	srv, c := newPair(t)
	c.timeout = 100 * time.Millisecond
	HandleTyped(srv, MethodAudit, func(ctx context.Context, req AuditRequest) (AuditPage, error) {
		select { // a long poll that finds something after 300ms
		case <-time.After(3 * c.timeout):
		case <-ctx.Done():
		}
		return AuditPage{Head: 1}, nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	page, err := c.Audit(context.Background(), AuditRequest{Wait: time.Second})
	if err != nil || page.Head != 1 {
		t.Fatalf("long poll = %+v, %v", page, err)
	}
	if _, err := c.Audit(context.Background(), AuditRequest{}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("no Wait = %v, want the plain timeout", err)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	srv, c := newPair(t)
	var active, peak atomic.Int32
	release := make(chan struct{})
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll) // before Stop, which waits for the handlers, should the test fail
	srv.Handle(MethodAudit, func(ctx context.Context, _ json.RawMessage) (any, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		return AuditPage{}, nil
	})
	srv.Handle(MethodNodeInfo, func(context.Context, json.RawMessage) (any, error) { return NodeInfo{ID: "x"}, nil })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c.timeout = 10 * time.Second
	const n = MaxConcurrent + 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := c.Audit(context.Background(), AuditRequest{})
			errs <- err
		})
	}
	poll.Eventually(t, 5*time.Second, "handlers to fill every slot", func() bool { return active.Load() == MaxConcurrent })
	// The extra requests must wait, not run: one is held in dispatch, the
	// others queue behind it on the subscription.
	sub := srv.subscription(MethodAudit)
	poll.Eventually(t, 5*time.Second, "the extra requests queued at the server", func() bool {
		delivered, _ := sub.Delivered()
		queued, _, _ := sub.Pending()
		return delivered == MaxConcurrent+1 && queued >= n-MaxConcurrent-1
	})
	if a := active.Load(); a > MaxConcurrent {
		t.Fatalf("%d handlers running, limit %d", a, MaxConcurrent)
	}
	releaseAll()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("request: %v", err)
		}
	}
	if p := peak.Load(); p != MaxConcurrent {
		t.Errorf("peak concurrency %d, want %d", p, MaxConcurrent)
	}
}

func TestLongPollDoesNotBlockOthers(t *testing.T) {
	srv, c := newPair(t)
	started := make(chan struct{})
	srv.Handle(MethodAudit, func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done() // until Stop
		return AuditPage{}, nil
	})
	srv.Handle(MethodNodeInfo, func(context.Context, json.RawMessage) (any, error) { return NodeInfo{ID: "x"}, nil })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c.timeout = 10 * time.Second
	done := make(chan error, 1)
	go func() { _, err := c.Audit(context.Background(), AuditRequest{Wait: time.Minute}); done <- err }()
	<-started
	if info, err := c.NodeInfo(context.Background()); err != nil || info.ID != "x" {
		t.Fatalf("NodeInfo during a long poll = %+v, %v", info, err)
	}
	srv.Stop()
	if err := <-done; err != nil {
		t.Fatalf("long poll after Stop = %v, want the handler's answer", err)
	}
}

func TestStopWaitsAndUnsubscribes(t *testing.T) {
	srv, c := newPair(t)
	entered, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	srv.Handle(MethodNodeInfo, func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(entered)
		<-ctx.Done()
		close(cancelled)
		// Still busy after cancellation: the work Stop must wait out.
		<-release
		finished.Store(true)
		return NodeInfo{}, nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = c.NodeInfo(context.Background()) }()
	<-entered
	stopped := make(chan struct{})
	go func() { srv.Stop(); close(stopped) }()
	<-cancelled
	select {
	case <-stopped:
		t.Fatal("Stop returned while a handler was still running")
	default:
	}
	close(release)
	<-stopped
	if !finished.Load() {
		t.Fatal("Stop returned before the in-flight handler finished")
	}
	srv.Stop() // idempotent
	if _, err := c.NodeInfo(context.Background()); !errors.Is(err, ErrNoNode) {
		t.Fatalf("after Stop = %v, want no responders", err)
	}
	if err := srv.Start(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

func TestHandleAfterStartPanics(t *testing.T) {
	srv, _ := newPair(t)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Handle after Start did not panic")
		}
	}()
	srv.Handle(MethodNodeInfo, nil)
}

func TestQueueGroupAnswersOnce(t *testing.T) {
	url := startNATS(t)
	var calls atomic.Int32
	for _, name := range []string{"a", "b", "c"} {
		s := NewServer(connect(t, url), name, nil)
		s.Handle(MethodNodeInfo, func(context.Context, json.RawMessage) (any, error) {
			calls.Add(1)
			return NodeInfo{ID: name}, nil
		})
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
	}
	c := NewClient(connect(t, url), 2*time.Second)
	for range 30 {
		if _, err := c.NodeInfo(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 30 {
		t.Fatalf("30 requests ran %d handlers, want one each", n)
	}
}

// subscription returns the server's subscription for method.
func (s *Server) subscription(method string) *nats.Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.mu.subs {
		if sub.Subject == SubjectPrefix+method {
			return sub
		}
	}
	return nil
}
