package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/outbox"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/follow"
	"github.com/agentic-dev/agentic/roles"
)

// Pipeline shape: pipelineEvents task.finished events (~200-byte payloads,
// an executor's most common event) emitted by pipelineEmitters goroutines,
// one event per Emit call — each call its own synced outbox write, as
// executors finishing steps on their own goroutines do.
const (
	pipelineEvents   = 50000
	pipelineEmitters = 16
	pipelineRuns     = 50
)

type pipelineResult struct {
	rate    float64       // events/s
	payload float64       // mean payload bytes
	perMsg  float64       // mean events per stream message
	emitted float64       // events/s accepted by the outbox (Emit returned)
	tail    time.Duration // last Emit returned → last event folded
	cpu     float64       // share of all cores used meanwhile
}

// countFolder counts the events folded into it.
type countFolder struct{ n atomic.Int64 }

func (c *countFolder) Fold(ev event.Event) {
	if ev.Type == event.TaskFinished {
		c.n.Add(1)
	}
}
func (c *countFolder) Settled(bool) {}

var _ roles.Folder = (*countFolder)(nil)

// runPipeline emits n events from g goroutines through an outbox into a
// ledger on a fresh server and returns the rate. It fails unless every
// event was folded and nothing was rejected.
func runPipeline(tb testing.TB, n, g int) pipelineResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := startServer(tb)
	defer s.stop()
	log := logger()
	dir := tb.TempDir()

	root, err := trust.NewRoot()
	if err != nil {
		tb.Fatal(err)
	}
	id, err := trust.NewIdentity(root, "bench-exec", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	ob, err := outbox.Open(filepath.Join(dir, "outbox"), id, log)
	if err != nil {
		tb.Fatal(err)
	}
	defer ob.Close()
	store, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	defer store.Close()
	folded := &countFolder{}
	fatal := make(chan error, 1)
	f := follow.New(follow.Config{
		JS: s.conn.JS, Store: store, Verifier: envelope.NewVerifier(root),
		Folders: []roles.Folder{folded}, Logger: log,
		OnFatal: func(err error) { fatal <- err },
	})
	if err := f.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	defer f.Stop()
	ob.Start(s.conn.JS)
	defer ob.Stop()

	drafts := makeDrafts(n)
	var payload int
	for _, d := range drafts {
		payload += len(d.Data)
	}

	clock := startCPU()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for w := range g {
		wg.Go(func() {
			for i := w; i < n; i += g {
				if err := ob.Emit(ctx, drafts[i]); err != nil {
					errs <- fmt.Errorf("emit %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	emitted := time.Since(start)
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	for folded.n.Load() < int64(n) {
		changed := f.Changed()
		if folded.n.Load() >= int64(n) {
			break
		}
		select {
		case <-changed:
		case err := <-fatal:
			tb.Fatalf("ledger: %v", err)
		case <-ctx.Done():
			tb.Fatalf("pipeline: %d of %d events folded after %s", folded.n.Load(), n, time.Since(start))
		}
	}
	took := time.Since(start)
	cpu := clock.utilization()

	head, _ := store.Head()
	msgs := streamLastSeq(tb, s.conn)
	if store.AppliedStreamSeq() != msgs {
		tb.Fatalf("pipeline: ledger applied stream seq %d, stream last seq %d", store.AppliedStreamSeq(), msgs)
	}
	if head != uint64(n) {
		tb.Fatalf("pipeline: ledger holds %d records for %d events (rejections or gaps?)", head, n)
	}
	return pipelineResult{
		rate:    float64(n) / took.Seconds(),
		payload: float64(payload) / float64(n),
		perMsg:  float64(n) / float64(msgs),
		emitted: float64(n) / emitted.Seconds(),
		tail:    took - emitted,
		cpu:     cpu,
	}
}

// makeDrafts builds n task.finished drafts of ~200-byte payloads spread
// over pipelineRuns runs.
func makeDrafts(n int) []event.Draft {
	runs := make([]string, pipelineRuns)
	for i := range runs {
		runs[i] = event.NewID()
	}
	tail := strings.Repeat("ok ", 1)
	out := make([]event.Draft, n)
	now := time.Now().UTC()
	for i := range out {
		out[i] = event.MustDraft(event.TaskFinished, runs[i%len(runs)], event.TaskFinishedData{
			Step: fmt.Sprintf("step-%05d", i), Attempt: 1, Node: "bench-exec",
			Status: event.TaskSucceeded, Started: now, Duration: event.Duration(1500 * time.Microsecond),
			OutputTail: tail, CommandHash: "5f1e2d3c4b5a6978",
		})
	}
	return out
}

// streamLastSeq is AGENTIC_EVENTS's last sequence.
func streamLastSeq(tb testing.TB, c *bus.Conn) uint64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return info.State.LastSeq
}
