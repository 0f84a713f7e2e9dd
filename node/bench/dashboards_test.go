package bench

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go"
)

// dashboards is how many live dashboards BenchmarkNoopSteps2000Dashboards
// holds open on the run.
const dashboards = 10

// BenchmarkNoopSteps2000Dashboards is the "10 dashboards" figure of the
// dashboard: the 2,000-step noop plan of BenchmarkNoopSteps2000, run four
// times on the same node — with no dashboard open, with ten Go SSE clients
// reading the run page's live stream (GET /runs/{id}/live) from the submit
// to the end, with them again, and without (in that order, so that the
// ledger's growth weighs on both alike) — reported as steps/s of each and
// their ratio
// (target: with/without ≥ 0.9). The clients read every frame as a browser
// would; frames_per_client says how many each got. A benchmark reports,
// it does not fail on the ratio.
func BenchmarkNoopSteps2000Dashboards(b *testing.B) {
	steps := noopLayers * noopWidth
	file := noopPlan(noopLayers, noopWidth)
	var none, with time.Duration
	var frames int64
	for b.Loop() {
		b.StopTimer()
		bn := startNode(b, noopSlots)
		b.StartTimer()
		// ABBA: the ledger grows run by run, so the order is balanced.
		for _, clients := range []int{0, dashboards, dashboards, 0} {
			took, f := runWatched(b, bn, file, steps, clients)
			if clients == 0 {
				none += took
			} else {
				with, frames = with+took, frames+f
			}
		}
		b.StopTimer()
		bn.Stop(b)
		b.StartTimer()
	}
	n := float64(2 * b.N) // runs of each kind
	without, withDash := float64(steps)*n/none.Seconds(), float64(steps)*n/with.Seconds()
	b.ReportMetric(without, "steps/s_no_dashboard")
	b.ReportMetric(withDash, "steps/s_10_dashboards")
	b.ReportMetric(withDash/without, "ratio")
	b.ReportMetric(float64(frames)/n/dashboards, "frames_per_client")
	b.ReportMetric(0, "ns/op")
}

// runWatched submits file and, when clients > 0, holds that many live
// streams of the run open until its run.finished is published; it returns
// the time from the submit to run.finished and the frames the clients
// read, and fails unless the run succeeded with every step and every
// client read at least one frame.
func runWatched(tb testing.TB, bn *benchNode, file string, steps, clients int) (time.Duration, int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type finish struct {
		at  time.Time
		run string
	}
	finished := make(chan finish, 16)
	v := envelope.NewVerifier(bn.root)
	sub, err := bn.nc.Subscribe(event.Subject(event.RunFinished, ""), func(m *nats.Msg) {
		at := time.Now()
		env, err := v.Verify(m.Data, m.Subject, at)
		if err != nil {
			return
		}
		for _, ev := range env.Events {
			finished <- finish{at: at, run: ev.Run}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := bn.nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	run, err := bn.submit(ctx, "noop2000.json", file)
	if err != nil {
		tb.Fatal(err)
	}
	watch, stop := context.WithCancel(ctx)
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var frames atomic.Int64
	got := make([]atomic.Int64, clients)
	url := "http://" + bn.HTTPAddr() + "/runs/" + run + "/live"
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for watch.Err() == nil {
				readLive(watch, client, url, func() { frames.Add(1); got[i].Add(1) })
				select { // the run may not be in the index yet: 404
				case <-watch.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	var took time.Duration
wait:
	for {
		select {
		case f := <-finished:
			if f.run == run {
				took = f.at.Sub(start)
				break wait
			}
		case <-ctx.Done():
			stop()
			wg.Wait()
			tb.Fatalf("run %s did not finish: %v", run, ctx.Err())
		}
	}
	stop()
	wg.Wait()
	for i := range got {
		if got[i].Load() == 0 {
			tb.Fatalf("dashboard %d read no frame of run %s", i, run)
		}
	}
	checkSucceeded(tb, ctx, bn.api, run, steps)
	return took, frames.Load()
}

// readLive reads one live stream at url with client until it ends or ctx does,
// calling frame for each state frame.
func readLive(ctx context.Context, client *http.Client, url string, frame func()) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: state") {
			frame()
		}
	}
}
