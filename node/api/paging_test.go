package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

// An answer over the connection's max payload reaches the caller as
// ErrTooLarge with a hint, at once, and the server keeps serving.
func TestOversizedAnswerIsAnError(t *testing.T) {
	url := startNATSWith(t, 64<<10)
	srv := NewServer(connect(t, url), "node-a", nil)
	t.Cleanup(srv.Stop)
	var limit atomic.Int64
	srv.Handle(MethodNodeInfo, func(ctx context.Context, _ json.RawMessage) (any, error) {
		limit.Store(MaxPayload(ctx))
		return NodeInfo{ID: strings.Repeat("x", 100<<10)}, nil
	})
	HandleTyped(srv, MethodMemoryList, func(context.Context, MemoryListRequest) ([]Fact, error) { return []Fact{}, nil })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := NewClient(connect(t, url), 10*time.Second)
	start := time.Now()
	_, err := c.NodeInfo(context.Background())
	var re *RemoteError
	if !errors.As(err, &re) || !errors.Is(err, ErrTooLarge) || re.Code != CodeTooLarge || HintOf(err) == "" {
		t.Fatalf("oversized answer = %#v, want ErrTooLarge with a hint", err)
	}
	if !strings.Contains(err.Error(), "node.info") || time.Since(start) > 5*time.Second {
		t.Errorf("error %q after %s", err, time.Since(start))
	}
	if limit.Load() != 64<<10 {
		t.Errorf("MaxPayload(ctx) = %d, want the connection's 64 KiB", limit.Load())
	}
	if _, err := c.MemoryList(context.Background(), ""); err != nil {
		t.Errorf("after an oversized answer: %v", err)
	}
	// A request too large for the connection fails at once, and says so.
	err = c.Call(context.Background(), MethodMemoryList, MemoryListRequest{Scope: strings.Repeat("s", 70<<10)}, nil)
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrTimeout) {
		t.Errorf("oversized request = %v", err)
	}
}

// holdLongPolls registers an audit handler whose long-polls wait for release
// (or Stop), and node.info / runs.list answering at once.
func holdLongPolls(srv *Server, active *atomic.Int32, release chan struct{}) {
	HandleTyped(srv, MethodAudit, func(ctx context.Context, req AuditRequest) (AuditPage, error) {
		if req.Wait > 0 {
			active.Add(1)
			defer active.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return AuditPage{Head: 1, Page: Page[AuditLine]{Items: []AuditLine{}, End: true}}, nil
	})
	HandleTyped(srv, MethodNodeInfo, func(context.Context, struct{}) (NodeInfo, error) { return NodeInfo{ID: "x"}, nil })
	HandleTyped(srv, MethodRunsList, func(context.Context, RunsListRequest) (Page[RunSummary], error) {
		return Page[RunSummary]{Items: []RunSummary{}, End: true}, nil
	})
}

// 32 followers long-polling do not hold up other queries.
func TestLongPollsDoNotStarveQueries(t *testing.T) {
	srv, c := newPair(t)
	var active atomic.Int32
	release := make(chan struct{})
	holdLongPolls(srv, &active, release)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c.timeout = 30 * time.Second
	const followers = 32
	var wg sync.WaitGroup
	errs := make(chan error, followers)
	for range followers {
		wg.Go(func() {
			_, err := c.Audit(context.Background(), AuditRequest{Wait: 20 * time.Second})
			errs <- err
		})
	}
	poll.Eventually(t, 5*time.Second, "32 long-polls to wait", func() bool { return active.Load() == followers })
	quick := NewClient(c.nc, 2*time.Second)
	for range 3 * MaxConcurrent {
		if _, err := quick.NodeInfo(context.Background()); err != nil {
			t.Fatalf("node.info while %d followers wait: %v", followers, err)
		}
		if _, err := quick.RunsList(context.Background(), RunsListRequest{}); err != nil {
			t.Fatalf("runs.list while %d followers wait: %v", followers, err)
		}
		if _, err := quick.Audit(context.Background(), AuditRequest{}); err != nil {
			t.Fatalf("audit without wait while %d followers wait: %v", followers, err)
		}
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("long-poll: %v", err)
		}
	}
}

// When the long-poll budget is full, another long-poll is answered ErrBusy
// at once, and the rest keeps serving.
func TestLongPollBudgetFull(t *testing.T) {
	srv, c := newPair(t)
	srv.polls = make(chan struct{}, 2)
	var active atomic.Int32
	release := make(chan struct{})
	holdLongPolls(srv, &active, release)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c.timeout = 30 * time.Second
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	for range 2 {
		wg.Go(func() {
			if _, err := c.Audit(context.Background(), AuditRequest{Wait: 20 * time.Second}); err != nil {
				t.Errorf("long-poll within the budget: %v", err)
			}
		})
	}
	poll.Eventually(t, 5*time.Second, "the budget to fill", func() bool { return active.Load() == 2 })
	start := time.Now()
	_, err := c.Audit(context.Background(), AuditRequest{Wait: 20 * time.Second})
	if !errors.Is(err, ErrBusy) || HintOf(err) == "" || time.Since(start) > 5*time.Second {
		t.Fatalf("long-poll over the budget = %v after %s, want ErrBusy at once", err, time.Since(start))
	}
	if _, err := c.Audit(context.Background(), AuditRequest{}); err != nil {
		t.Errorf("audit without wait, budget full: %v", err)
	}
	if _, err := c.NodeInfo(context.Background()); err != nil {
		t.Errorf("node.info, budget full: %v", err)
	}
}

// listing serves items 1..n in pages of at most per items, cut by count
// and by a Pager, with the cursor the last item.
func listing(n, per int) func(ctx context.Context, cursor string) (*Page[int], error) {
	return func(ctx context.Context, cursor string) (*Page[int], error) {
		after := 0
		if cursor != "" {
			var err error
			if after, err = strconv.Atoi(cursor); err != nil {
				return nil, err
			}
		}
		p := &Page[int]{}
		for i := after + 1; i <= n && len(p.Items) < per-(i%2); i++ { // short pages too
			p.Items = append(p.Items, i)
		}
		last := after
		if len(p.Items) > 0 {
			last = p.Items[len(p.Items)-1]
		}
		p.End = last == n
		if !p.End {
			p.Next = strconv.Itoa(last)
		}
		return p, nil
	}
}

func TestWalk(t *testing.T) {
	ctx := context.Background()
	var got []int
	for it, err := range Walk(ctx, "", listing(10, 3)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it)
	}
	if fmt.Sprint(got) != "[1 2 3 4 5 6 7 8 9 10]" {
		t.Fatalf("Walk = %v", got)
	}
	got = nil
	for it, err := range Walk(ctx, "7", listing(10, 3)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it)
	}
	if fmt.Sprint(got) != "[8 9 10]" {
		t.Errorf("Walk from 7 = %v", got)
	}
	// A page that is not the end must move on.
	stuck := func(context.Context, string) (*Page[int], error) { return &Page[int]{Items: []int{1}, Next: "x"}, nil }
	n := 0
	var werr error
	for _, err := range Walk(ctx, "x", stuck) {
		if err != nil {
			werr = err
			break
		}
		n++
	}
	if werr == nil || n != 1 {
		t.Errorf("stuck listing: %d items, err %v", n, werr)
	}
	// Errors stop the walk.
	boom := errors.New("boom")
	for _, err := range Walk(ctx, "", func(context.Context, string) (*Page[int], error) { return nil, boom }) {
		if !errors.Is(err, boom) {
			t.Errorf("fetch error = %v", err)
		}
	}
}

// Lines that came without their signed message get it back through
// ledger.message, read in several pages.
func TestSplitLinesAreCompleted(t *testing.T) {
	url := startNATSWith(t, 16<<10)
	srv := NewServer(connect(t, url), "node-a", nil)
	t.Cleanup(srv.Stop)
	msg := []byte(strings.Repeat("eyJhbGciOiJFZERTQSJ9.", 2000)) // 42 KB
	msg[7] = 0xff                                                // not UTF-8: carried as it is
	HandleTyped(srv, MethodLedgerMessage, func(ctx context.Context, req MessageRequest) (Page[json.RawMessage], error) {
		if req.StreamSeq != 7 {
			return Page[json.RawMessage]{}, fmt.Errorf("%w: stream seq %d", ErrNotFound, req.StreamSeq)
		}
		off, _ := strconv.Atoi(req.Cursor)
		p := NewPager(1000, MaxPayload(ctx))
		for off < len(msg) {
			chunk := msg[off:min(off+1000, len(msg))]
			if ok, err := p.Add(chunk); err != nil || !ok {
				break
			}
			off += len(chunk)
		}
		return p.Page(strconv.Itoa(off), off == len(msg)), nil
	})
	HandleTyped(srv, MethodAudit, func(context.Context, AuditRequest) (AuditPage, error) {
		return AuditPage{Page: Page[AuditLine]{Items: []AuditLine{
			{Seq: 1, Type: "a", JWS: "small"},
			{Seq: 2, Type: "b", StreamSeq: 7, JWSSize: len(msg)},
		}, End: true}}, nil
	})
	line := `{"seq":2,"hash":"ab","msg_id":"m"}`
	HandleTyped(srv, MethodLedgerExport, func(context.Context, ExportRequest) (ExportPage, error) {
		return ExportPage{Page: Page[ExportLine]{Items: []ExportLine{
			{Seq: 1, Line: json.RawMessage(`{"seq":1}`)},
			{Seq: 2, Line: json.RawMessage(line), JWSSize: len(msg), JWSAt: strings.Index(line, `,"msg_id"`), StreamSeq: 7},
		}, End: true}}, nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := NewClient(connect(t, url), 5*time.Second)
	ctx := context.Background()
	raw, err := c.LedgerMessage(ctx, 7)
	if err != nil || string(raw) != string(msg) {
		t.Fatalf("LedgerMessage = %d bytes, %v", len(raw), err)
	}
	if _, err := c.LedgerMessage(ctx, 8); !errors.Is(err, ErrNotFound) {
		t.Errorf("LedgerMessage(8) = %v", err)
	}
	var lines []AuditLine
	for l, err := range c.AuditLines(ctx, AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 2 || lines[0].JWS != "small" || lines[1].JWS != string(msg) || lines[1].JWSSize != 0 {
		t.Fatalf("audit lines = %d, second has %d bytes of jws, jws_size %d", len(lines), len(lines[1].JWS), lines[1].JWSSize)
	}
	str, _ := json.Marshal(string(msg))
	want := `{"seq":2,"hash":"ab","jws":` + string(str) + `,"msg_id":"m"}`
	var got []string
	for l, err := range c.ExportLines(ctx, ExportRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.JWSSize != 0 || l.JWSAt != 0 {
			t.Errorf("export line %d still split: %+v", l.Seq, l)
		}
		got = append(got, string(l.Line))
	}
	if len(got) != 2 || got[0] != `{"seq":1}` || got[1] != want {
		t.Fatalf("export lines = %.200q", got)
	}
}
