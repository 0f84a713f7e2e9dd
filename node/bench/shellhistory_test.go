package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// Shape of figure (j): a history of shellHistoryRuns × historySteps noop
// steps (about 3 events a step: ~250k events), then shellHistoryRounds
// shell runs per node.
const (
	shellHistoryRuns   = 42
	shellHistoryRounds = 5
)

// BenchmarkShellHistory250k is figure (j): the real agentd binary (every
// role, embedded NATS, default flags but the ports; as root, steps run as
// nobody) on a data directory holding a ~250k-event history, first
// folded, then idle: its resident memory against the same binary's on an
// empty data directory (rss_ratio, target ≤ 1.5). Then the 2,000 shell
// steps of figure (f) — 50 chains of 40 `run: "true"`, submitted through
// agentctl with default flags — timed from the run's creation to its end
// (its created_at and finished_at), against the same 2,000 processes
// forked by `xargs -P SLOTS sh -c true` just before each run
// (ratio_steps_over_raw, target ≥ 0.6). SLOTS is the default executor
// slots (2 per CPU).
//
// The same is measured in the same function with agentd and agentctl
// built from the base commit (AGENTIC_BENCH_BASE, default c949e8d; "none"
// skips it) on a copy of the same history, the shell runs alternating
// between the two nodes; figures are medians over the rounds. With
// AGENTIC_BENCH_PROFILE set to a directory, the nodes serve their Go
// profiles, the heap profiles are saved there (idleMemory), and so is a
// CPU profile of the first 2 s of each shell run (NAME-shell-ROUND.cpu;
// AGENTIC_BENCH_PROFILE_SECONDS sets another length: one longer than the
// run profiles the whole run and the node idle after it).
func BenchmarkShellHistory250k(b *testing.B) {
	root := moduleRoot(b)
	type variant struct {
		name          string
		agentd, ctl   string
		a             *agentdProc
		empty, full   memory
		ratio, rate   []float64
		cpu, kids     []float64 // agentd's CPU ms per step, its own and its reaped children's
		firstFold     time.Duration
		events, slots int
	}
	vs := []*variant{{name: "new"}}
	vs[0].agentd, vs[0].ctl = buildAt(b, root, "new")
	if base := os.Getenv("AGENTIC_BENCH_BASE"); base != "none" {
		if base == "" {
			base = baseCommit
		}
		if src := exportCommit(b, root, base); src != "" {
			v := &variant{name: "base"}
			v.agentd, v.ctl = buildAt(b, src, "base")
			vs = append(vs, v)
		}
	}
	slots := config.Default().Executor.Slots
	steps := shellChains * shellDepth
	shared := sharedTempDir(b)
	plan := filepath.Join(shared, "shell2000.json")
	if err := os.WriteFile(plan, []byte(shellPlan(shellChains, shellDepth)), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		history := filepath.Join(b.TempDir(), "history")
		for _, v := range vs {
			flags := unprivileged(b, shared, v.name)
			// An empty node: its idle memory (and, for the first, the
			// epoch the history is written with).
			data := filepath.Join(b.TempDir(), v.name)
			v.a = startAgentdOn(b, v.agentd, data, flags...)
			v.a.waitReady(b, 2*time.Minute)
			v.empty = v.a.idleMemory(b, v.name+"-empty")
			if v == vs[0] {
				info := v.a.nodeInfo(b)
				v.a.stop(b)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
				t0 := time.Now()
				v.events = nodetest.PublishHistory(b, ctx, data, "bench-history", nodetest.History{Runs: shellHistoryRuns, Steps: historySteps, Epoch: info.Epoch})
				cancel()
				b.Logf("history: %d events in %s", v.events, time.Since(t0).Round(time.Millisecond))
				copyTree(b, data, history)
			} else {
				v.a.stop(b)
				copyTree(b, history, data)
				v.events = vs[0].events
			}
			v.a = startAgentdOn(b, v.agentd, data, flags...)
			v.firstFold = v.a.waitReady(b, 20*time.Minute)
			v.full = v.a.idleMemory(b, v.name+"-history")
		}
		for round := range shellHistoryRounds {
			for _, v := range vs {
				raw := forkRaw(b, steps, slots)
				self0, kids0 := procCPU(v.a.cmd.Process.Pid)
				prof := v.a.cpuProfile(b, fmt.Sprintf("%s-shell-%d", v.name, round), profileSeconds(b))
				took := v.a.shellRun(b, v.ctl, plan, steps)
				prof()
				self1, kids1 := procCPU(v.a.cmd.Process.Pid)
				rate, rawRate := float64(steps)/took.Seconds(), float64(steps)/raw.Seconds()
				v.rate, v.ratio = append(v.rate, rate), append(v.ratio, rate/rawRate)
				cpu, kids := ms(self1-self0)/float64(steps), ms(kids1-kids0)/float64(steps)
				v.cpu, v.kids = append(v.cpu, cpu), append(v.kids, kids)
				b.Logf("%s: %.0f steps/s, raw %.0f procs/s, ratio %.2f; agentd CPU %.3f ms a step, its step processes %.3f", v.name, rate, rawRate, rate/rawRate, cpu, kids)
			}
		}
		for _, v := range vs {
			v.a.stop(b)
		}
		b.StartTimer()
	}
	for _, v := range vs {
		b.ReportMetric(float64(v.events), v.name+"_events")
		b.ReportMetric(v.firstFold.Seconds(), v.name+"_first_fold_s")
		b.ReportMetric(v.empty.rss, v.name+"_rss_empty_MiB")
		b.ReportMetric(v.full.rss, v.name+"_rss_history_MiB")
		b.ReportMetric(v.full.rss/v.empty.rss, v.name+"_rss_ratio")
		b.ReportMetric(median(v.rate), v.name+"_steps/s")
		b.ReportMetric(median(v.ratio), v.name+"_ratio_steps_over_raw")
		b.ReportMetric(median(v.cpu), v.name+"_cpu_ms/step")
		b.ReportMetric(median(v.kids), v.name+"_children_cpu_ms/step")
	}
	b.ReportMetric(float64(slots), "slots")
	b.ReportMetric(0, "ns/op")
}

// shellRun submits the plan file through agentctl (default flags), waits
// for its run to finish, checks that it succeeded with every step, and
// returns the time from the run's creation to its end.
func (a *agentdProc) shellRun(tb testing.TB, ctl, plan string, steps int) time.Duration {
	tb.Helper()
	id := a.agentctlOut(tb, ctl, "goal", "submit", "-f", plan)
	c := a.client(tb)
	defer c.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for {
		d, err := c.RunDetail(ctx, api.RunsGetRequest{ID: id, Summary: true})
		if err != nil {
			tb.Fatalf("runs.get %s: %v", id, err)
		}
		if s := d.Run; s.FinishedAt != nil {
			if s.Status != event.RunSucceeded || s.Steps != steps || api.Done(s) != steps {
				tb.Fatalf("run %s ended %s (%s) with %d of %d steps done", id, s.Status, s.Reason, api.Done(s), steps)
			}
			return s.FinishedAt.Sub(s.CreatedAt)
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("run %s did not finish within 10 minutes", id)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// agentctlOut runs the CLI with default flags against the node and
// returns its standard output, trimmed.
func (a *agentdProc) agentctlOut(tb testing.TB, ctl string, argv ...string) string {
	tb.Helper()
	cmd := exec.Command(ctl, argv...)
	cmd.Env = append(os.Environ(), "NATS_URL="+a.natsURL, "AGENTIC_CREDS="+filepath.Join(a.data, "operator.creds"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("agentctl %s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// median is the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	return s[len(s)/2]
}

// profileSeconds is how long cpuProfile profiles a shell run: 2 s, or
// AGENTIC_BENCH_PROFILE_SECONDS.
func profileSeconds(tb testing.TB) time.Duration {
	tb.Helper()
	v := os.Getenv("AGENTIC_BENCH_PROFILE_SECONDS")
	if v == "" {
		return 2 * time.Second
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		tb.Fatalf("AGENTIC_BENCH_PROFILE_SECONDS=%q: want a whole number of seconds, 1 or more", v)
	}
	return time.Duration(n) * time.Second
}

// cpuProfile starts saving a CPU profile of the node's next d (name.cpu
// in AGENTIC_BENCH_PROFILE) when the node serves its profiles, and
// returns a function that waits for it; it does nothing otherwise.
func (a *agentdProc) cpuProfile(tb testing.TB, name string, d time.Duration) (wait func()) {
	tb.Helper()
	a.mu.Lock()
	debug := a.debug
	a.mu.Unlock()
	dir := os.Getenv("AGENTIC_BENCH_PROFILE")
	if dir == "" || debug == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debug, int(d.Seconds()))
		resp, err := http.Get(url)
		if err != nil {
			tb.Logf("GET %s: %v", url, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, name+".cpu"))
		if err != nil {
			tb.Logf("cpu profile: %v", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}()
	return func() { <-done }
}
