package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// finishedRun starts a node and runs one plan to its end.
func finishedRun(t *testing.T) (*nodetest.Node, string) {
	t.Helper()
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	run := n.Submit(t, "one.yaml", onePlan)
	n.WaitRun(t, run, 30*time.Second)
	return n, run
}

// cancel publishes a run.cancel of run (ignored once the run has ended).
func cancel(t *testing.T, n *nodetest.Node, run, reason string) {
	t.Helper()
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.RunCancel, run, event.RunCancelData{Reason: reason})); err != nil {
		t.Fatal(err)
	}
}

// A bad cursor, a cursor beyond the head, an unknown run or stream seq: the
// caller gets the error, with a hint, not a timeout.
func TestQueryErrorsReachTheCaller(t *testing.T) {
	n, _ := finishedRun(t)
	ctx := context.Background()
	page, err := n.API.Audit(ctx, api.AuditRequest{})
	if err != nil || !page.End || page.Next != strconv.FormatUint(page.Head, 10) {
		t.Fatalf("first audit page = %+v, %v", page, err)
	}
	head := page.Head
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"after max uint64", func() error { _, err := n.API.Audit(ctx, api.AuditRequest{After: math.MaxUint64}); return err }, api.ErrBadRequest},
		{"after max uint64, long-poll", func() error {
			_, err := n.API.Audit(ctx, api.AuditRequest{After: math.MaxUint64, Wait: time.Minute})
			return err
		}, api.ErrBadRequest},
		{"after head+1", func() error { _, err := n.API.Audit(ctx, api.AuditRequest{After: head + 1}); return err }, api.ErrBadRequest},
		{"cursor not a number", func() error { _, err := n.API.Audit(ctx, api.AuditRequest{Cursor: "x"}); return err }, api.ErrBadRequest},
		{"unknown run", func() error { _, err := n.API.Audit(ctx, api.AuditRequest{Run: "ffffffff"}); return err }, api.ErrNotFound},
		{"export cursor beyond head", func() error {
			_, err := n.API.LedgerExport(ctx, api.ExportRequest{Cursor: "1:" + strconv.FormatUint(head+5, 10)})
			return err
		}, api.ErrBadRequest},
		{"export cursor backwards", func() error { _, err := n.API.LedgerExport(ctx, api.ExportRequest{Cursor: "5:3"}); return err }, api.ErrBadRequest},
		{"export after beyond head", func() error { _, err := n.API.LedgerExport(ctx, api.ExportRequest{After: head + 1}); return err }, api.ErrBadRequest},
		{"unknown message", func() error { _, err := n.API.LedgerMessage(ctx, 1<<40); return err }, api.ErrNotFound},
	} {
		start := time.Now()
		err := c.call()
		var re *api.RemoteError
		if !errors.As(err, &re) || !errors.Is(err, c.want) || api.HintOf(err) == "" {
			t.Errorf("%s = %v (hint %q), want %v with a hint", c.name, err, api.HintOf(err), c.want)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("%s took %s", c.name, time.Since(start))
		}
	}
	if _, err := n.API.Audit(ctx, api.AuditRequest{After: math.MaxUint64}); err == nil || !strings.Contains(err.Error(), "beyond the ledger head") {
		t.Errorf("after max uint64 = %v", err)
	}
	// A long-poll a little ahead (another ledger node answered before)
	// waits for the head, and ends with the cursor it was given.
	page, err = n.API.Audit(ctx, api.AuditRequest{After: head + 2, Wait: 100 * time.Millisecond})
	if err != nil || len(page.Items) != 0 || !page.End || page.Next != strconv.FormatUint(head+2, 10) {
		t.Fatalf("long-poll ahead of the head = %+v, %v", page, err)
	}
}

// A record larger than a page comes without its JWS, which ledger.message
// gives; since seeks by stream time; the run index selects a run.
func TestAuditPagesByIndexes(t *testing.T) {
	n, run := finishedRun(t)
	ctx := context.Background()
	first, err := n.API.Audit(ctx, api.AuditRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cancel(t, n, run, strings.Repeat("lorem ipsum ", 50_000))
	cancel(t, n, run, "small")
	var raw api.AuditPage // as the node sends it
	poll.Eventually(t, 10*time.Second, "the cancels", func() bool {
		raw = api.AuditPage{}
		err := n.API.Call(ctx, api.MethodAudit, api.AuditRequest{After: first.Head}, &raw)
		return err == nil && len(raw.Items) == 2
	})
	big, small := raw.Items[0], raw.Items[1]
	if big.JWS != "" || big.JWSSize < 600_000 || big.StreamSeq == 0 || small.JWS == "" || small.JWSSize != 0 || !raw.End {
		t.Fatalf("raw page: big jws %d bytes, jws_size %d; small jws %d bytes; end %v", len(big.JWS), big.JWSSize, len(small.JWS), raw.End)
	}
	msg, err := n.API.LedgerMessage(ctx, big.StreamSeq)
	if err != nil || len(msg) != big.JWSSize {
		t.Fatalf("ledger.message = %d bytes, %v", len(msg), err)
	}
	whole, err := n.API.Audit(ctx, api.AuditRequest{After: first.Head})
	if err != nil || whole.Items[0].JWS != string(msg) || whole.Items[0].JWSSize != 0 {
		t.Fatalf("client page: %v", err)
	}
	if big.StreamTime.IsZero() || small.StreamTime.Before(big.StreamTime) {
		t.Errorf("stream times %v, %v", big.StreamTime, small.StreamTime)
	}

	// Since: from the small cancel's stream time on.
	page, err := n.API.Audit(ctx, api.AuditRequest{Since: small.StreamTime})
	if err != nil || len(page.Items) == 0 || page.Items[0].Seq != small.Seq || !page.End {
		t.Fatalf("since = %+v, %v", page, err)
	}
	// Run, with a page of one: every page but the last says so.
	var seqs []uint64
	cursor := ""
	for {
		p, err := n.API.Audit(ctx, api.AuditRequest{Run: run[:8], Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range p.Items {
			if l.Run != run {
				t.Fatalf("--run line of run %q", l.Run)
			}
			seqs = append(seqs, l.Seq)
		}
		if p.End {
			break
		}
		cursor = p.Next
	}
	if len(seqs) < 5 || seqs[len(seqs)-1] != small.Seq {
		t.Fatalf("run %s: seqs %v", run, seqs)
	}
}

// 32 followers long-polling the audit leave the node free to answer
// everything else.
func TestFollowersDoNotStarveQueries(t *testing.T) {
	n, run := finishedRun(t)
	ctx := context.Background()
	page, err := n.API.Audit(ctx, api.AuditRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const followers = 32
	var wg sync.WaitGroup
	got := make(chan int, followers)
	slow := api.NewClient(n.NC, 30*time.Second)
	for range followers {
		wg.Go(func() {
			p, err := slow.Audit(ctx, api.AuditRequest{Cursor: page.Next, Wait: 25 * time.Second})
			if err != nil {
				t.Errorf("follower: %v", err)
				return
			}
			got <- len(p.Items)
		})
	}
	// The followers are waiting (nothing is committing); every other query
	// answers, more of them than MaxConcurrent.
	poll.Eventually(t, 10*time.Second, "32 followers waiting", func() bool {
		return metric(t, n, "agentic_api_long_polls") == "32"
	})
	quick := api.NewClient(n.NC, 3*time.Second)
	for range 2 * api.MaxConcurrent {
		if _, err := quick.NodeInfo(ctx); err != nil {
			t.Fatalf("node.info with %d followers: %v", followers, err)
		}
		if _, err := quick.RunsList(ctx, api.RunsListRequest{}); err != nil {
			t.Fatalf("runs.list with %d followers: %v", followers, err)
		}
		if _, err := quick.RunsGet(ctx, run); err != nil {
			t.Fatalf("runs.get with %d followers: %v", followers, err)
		}
	}
	cancel(t, n, run, "wake the followers")
	wg.Wait()
	close(got)
	woke := 0
	for n := range got {
		if n == 1 {
			woke++
		}
	}
	if woke != followers {
		t.Fatalf("%d of %d followers got the new entry", woke, followers)
	}
}

// The raw export page carries a record larger than a page without its
// "jws"; the client puts it back.
func TestExportSplitsLargeRecords(t *testing.T) {
	n, run := finishedRun(t)
	ctx := context.Background()
	cancel(t, n, run, strings.Repeat("lorem ipsum ", 50_000))
	var raw api.ExportPage
	poll.Eventually(t, 10*time.Second, "the large record in the export", func() bool {
		raw = api.ExportPage{}
		if err := n.API.Call(ctx, api.MethodLedgerExport, api.ExportRequest{}, &raw); err != nil {
			return false
		}
		for _, l := range raw.Items {
			if l.JWSSize > 0 {
				return true
			}
		}
		return false
	})
	for _, l := range raw.Items {
		if l.JWSSize > 0 && (l.StreamSeq == 0 || l.JWSAt <= 0 || strings.Contains(string(l.Line), `"jws"`)) {
			t.Fatalf("split line %d: %+v", l.Seq, l)
		}
		if l.JWSSize == 0 && !json.Valid(l.Line) {
			t.Fatalf("line %d is not JSON", l.Seq)
		}
	}
}

// metric reads one of the node's Prometheus gauges ("" if absent).
func metric(t *testing.T, n *nodetest.Node, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

// An audit filtered by type returns exactly the entries of those types, in
// order, however the pages are cut — pages that pass over their budget of
// other entries say where they stopped and are not the end — and a filter
// that matches nothing still ends.
func TestAuditFiltersByType(t *testing.T) {
	n, run := finishedRun(t)
	ctx := context.Background()
	var want []uint64
	for l, err := range n.API.AuditLines(ctx, api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.TaskFinished) || l.Type == string(event.PlanAccepted) {
			want = append(want, l.Seq)
		}
	}
	if len(want) < 2 {
		t.Fatalf("the run left %d task.finished and plan.accepted entries", len(want))
	}
	types := []string{string(event.TaskFinished), string(event.PlanAccepted)}
	collect := func(req api.AuditRequest) (seqs []uint64, empty int) {
		t.Helper()
		cursor := ""
		for range 10_000 {
			req.Cursor = cursor
			p, err := n.API.Audit(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range p.Items {
				if !slices.Contains(types, l.Type) {
					t.Fatalf("a %s entry in a listing of %v", l.Type, types)
				}
				seqs = append(seqs, l.Seq)
			}
			if len(p.Items) == 0 && !p.End {
				empty++
			}
			if p.End {
				return seqs, empty
			}
			cursor = p.Next
		}
		t.Fatal("the listing never ended")
		return nil, 0
	}
	if got, _ := collect(api.AuditRequest{Types: types}); !slices.Equal(got, want) {
		t.Fatalf("filtered = %v, want %v", got, want)
	}
	if got, _ := collect(api.AuditRequest{Types: types, Run: run, Limit: 1}); !slices.Equal(got, want) {
		t.Fatalf("filtered by run, pages of one = %v, want %v", got, want)
	}
	restore := node.SetAuditExamine(2)
	got, empty := collect(api.AuditRequest{Types: types})
	restore()
	if !slices.Equal(got, want) || empty == 0 {
		t.Fatalf("with a budget of 2 = %v (%d empty pages), want %v", got, empty, want)
	}

	// Nothing of the type: the listing ends, a long-poll too.
	none := []string{"no.such"}
	if got, _ := collect(api.AuditRequest{Types: none}); len(got) != 0 {
		t.Fatalf("no.such = %v", got)
	}
	p, err := n.API.Audit(ctx, api.AuditRequest{Types: none, Wait: 100 * time.Millisecond})
	if err != nil || len(p.Items) != 0 || !p.End {
		t.Fatalf("long-poll of no.such = %+v, %v", p, err)
	}
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	if _, err := n.API.Audit(ctx, api.AuditRequest{Types: many}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("65 types: %v, want a bad request", err)
	}
}
