package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

// Shape of figure (i): submitRounds submissions to each node, alternating
// between the nodes, after submitWarmup unmeasured ones each.
const (
	submitRounds = 25
	submitWarmup = 2
	// baseCommit is the code the figures are compared with by default:
	// the main branch before the round trips before a start were cut.
	baseCommit = "c949e8d"
)

// BenchmarkSubmitToStart is figure (i): a one-step plan file submitted
// through agentctl with default flags (`agentctl goal submit -f
// plan.json`, a process of its own) to a real agentd (every role,
// embedded NATS), timed from agentctl's start until the step's process
// runs (the step writes the time it ran, `date +%s%N`, to a file). The
// same is measured in the same function against agentd and agentctl built
// from each base commit (AGENTIC_BENCH_BASE, a comma-separated list of
// commits, default c949e8d; "none" skips them), the nodes idle side by
// side and the submissions alternating between them, each round starting
// at the next node. Reported, for each:
// p50 (and p90) in ms, its ratio to the first base's, how long agentctl
// itself took (p50), and the p50 of each hop on the way, from the times
// the stream stored each event (hops).
//
// As root, the nodes run steps as nobody (--executor-run-as nobody: an
// executor running as root refuses steps otherwise).
func BenchmarkSubmitToStart(b *testing.B) {
	root := moduleRoot(b)
	type variant struct {
		name          string
		agentd, ctl   string
		a             *agentdProc
		lat, ctlTimes durations
		runs          []submitted
		hops          hopTimes
	}
	vs := []*variant{{name: "new"}}
	vs[0].agentd, vs[0].ctl = buildAt(b, root, "new")
	if bases := cmp.Or(os.Getenv("AGENTIC_BENCH_BASE"), baseCommit); bases != "none" {
		for i, base := range strings.Split(bases, ",") {
			src := exportCommit(b, root, strings.TrimSpace(base))
			if src == "" {
				continue
			}
			// The first base is "base" (the figure's name since it had
			// one); the others are named by their commit.
			v := &variant{name: "base"}
			if i > 0 {
				v.name = "base_" + metricName(base)
			}
			v.agentd, v.ctl = buildAt(b, src, v.name)
			vs = append(vs, v)
		}
	}
	markers := sharedTempDir(b)
	n := 0 // numbers the markers across passes: each is written once
	for b.Loop() {
		b.StopTimer()
		for _, v := range vs {
			v.a = startAgentdOn(b, v.agentd, filepath.Join(b.TempDir(), v.name), unprivileged(b, markers, v.name)...)
			v.a.waitReady(b, 2*time.Minute)
		}
		for round := range submitWarmup + submitRounds {
			// Each round starts at the next variant, so that none always
			// follows the same one (whose node is still busy with its
			// run's tail when the next agentctl starts).
			for i := range vs {
				v := vs[(round+i)%len(vs)]
				n++
				sub := submitOne(b, v.a, v.ctl, markers, n)
				b.Logf("%s: submission %d started its step after %s (agentctl ran %s)", v.name, n, sub.lat.Round(time.Millisecond), sub.took.Round(time.Millisecond))
				if round >= submitWarmup {
					v.lat, v.ctlTimes = append(v.lat, sub.lat), append(v.ctlTimes, sub.took)
					v.runs = append(v.runs, sub)
				}
			}
		}
		for _, v := range vs {
			b.Logf("%s: p50 of this pass %.1f ms", v.name, durations(v.lat[len(v.lat)-len(v.runs):]).quantile(0.5))
			v.hops.add(b, v.a, v.runs)
			v.runs = nil
			v.a.stop(b)
		}
		b.StartTimer()
	}
	for _, v := range vs {
		b.ReportMetric(v.lat.quantile(0.5), v.name+"_p50_ms")
		b.ReportMetric(v.lat.quantile(0.9), v.name+"_p90_ms")
		b.ReportMetric(v.ctlTimes.quantile(0.5), v.name+"_agentctl_p50_ms")
		v.hops.report(b, v.name)
	}
	for _, v := range vs[1:] {
		b.ReportMetric(vs[0].lat.quantile(0.5)/v.lat.quantile(0.5), "new_over_"+v.name+"_p50")
	}
	b.ReportMetric(0, "ns/op")
}

// metricName is s with every character a metric's unit may not hold
// replaced by '_'.
func metricName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.TrimSpace(s))
}

// submitted is one measured submission.
type submitted struct {
	// run is the run id agentctl printed.
	run string
	// start is when agentctl started, ran when the step's process ran.
	start, ran time.Time
	// lat is ran-start, took how long agentctl ran.
	lat, took time.Duration
}

// hopTimes are the hops of the submissions, from the times the stream
// stored each event of their runs: agentctl's start → goal.submitted
// (submit), → plan.proposed when the leader waited for it (the
// acceptance's basis holds it: planner), the plan (that proposal, or the
// goal that carried it) → plan.accepted (accept), → task.assigned
// (assign), → the step's process ran (start).
type hopTimes struct {
	submit, planner, accept, assign, start durations
}

// add reads the ledger of a for the runs and adds their hops.
func (h *hopTimes) add(tb testing.TB, a *agentdProc, runs []submitted) {
	tb.Helper()
	c := a.client(tb)
	defer c.close()
	type first struct {
		at    time.Time
		seq   uint64
		basis uint64 // of a decision
	}
	stored := map[string]map[string]first{} // run → type → its first event
	for l, err := range c.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			tb.Fatalf("audit: %v", err)
		}
		if l.Run == "" || l.StreamTime.IsZero() {
			continue
		}
		m := stored[l.Run]
		if m == nil {
			m = map[string]first{}
			stored[l.Run] = m
		}
		if _, ok := m[l.Type]; !ok {
			var d event.Decision
			_ = json.Unmarshal(l.Data, &d)
			m[l.Type] = first{at: l.StreamTime, seq: l.Seq, basis: d.Basis}
		}
	}
	for _, r := range runs {
		m := stored[r.run]
		goal, accepted, assigned := m[string(event.GoalSubmitted)], m[string(event.PlanAccepted)], m[string(event.TaskAssigned)]
		if goal.at.IsZero() || accepted.at.IsZero() || assigned.at.IsZero() {
			tb.Logf("run %s: the ledger lacks its goal, acceptance or assignment; its hops are left out", r.run)
			continue
		}
		// The leader waited for the planner when it decided on a state
		// that held the proposal (its basis); otherwise the goal
		// carried the plan and the proposal, if any, came beside it.
		plan := goal.at
		if p := m[string(event.PlanProposed)]; !p.at.IsZero() && p.seq <= accepted.basis {
			h.planner = append(h.planner, p.at.Sub(goal.at))
			plan = p.at
		}
		h.submit = append(h.submit, goal.at.Sub(r.start))
		h.accept = append(h.accept, accepted.at.Sub(plan))
		h.assign = append(h.assign, assigned.at.Sub(accepted.at))
		h.start = append(h.start, r.ran.Sub(assigned.at))
	}
}

// report reports the p50 of each hop, in ms, named after the variant.
func (h *hopTimes) report(b *testing.B, name string) {
	for _, hop := range []struct {
		name string
		d    durations
	}{{"submit", h.submit}, {"planner", h.planner}, {"accept", h.accept}, {"assign", h.assign}, {"start", h.start}} {
		if len(hop.d) > 0 {
			b.ReportMetric(hop.d.quantile(0.5), name+"_hop_"+hop.name+"_p50_ms")
		}
	}
}

// submitOne submits a one-step plan whose step writes the time it ran to
// markers/m-<n>, and returns the run, the time from agentctl's start
// until then, and how long agentctl ran. It fails unless agentctl
// succeeds and the step runs within a minute.
func submitOne(tb testing.TB, a *agentdProc, ctl, markers string, n int) submitted {
	tb.Helper()
	marker := filepath.Join(markers, fmt.Sprintf("m-%d", n))
	plan := filepath.Join(markers, fmt.Sprintf("plan-%d.json", n))
	body := fmt.Sprintf(`{"goal": "submit to start %d", "steps": [{"id": "only", "run": "date +%%s%%N > %s"}]}`, n, marker)
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(ctl, "goal", "submit", "-f", plan)
	cmd.Env = append(os.Environ(), "NATS_URL="+a.natsURL, "AGENTIC_CREDS="+filepath.Join(a.data, "operator.creds"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("agentctl goal submit: %v\n%s", err, stderr.Bytes())
	}
	took := time.Since(start)
	// The step writes its own start time: how often it is looked for
	// does not change the figure.
	var b []byte
	if err := poll.Wait(time.Minute, func() bool {
		b, _ = os.ReadFile(marker)
		return bytes.HasSuffix(b, []byte("\n"))
	}); err != nil {
		tb.Fatalf("the step of submission %d did not run within a minute\n%s", n, a.stderr())
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		tb.Fatalf("marker %s: %v", marker, err)
	}
	ran := time.Unix(0, ns)
	return submitted{run: strings.TrimSpace(stdout.String()), start: start, ran: ran, lat: ran.Sub(start), took: took}
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		tb.Skipf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// buildAt builds agentd and agentctl from the module at src into a
// temporary directory.
func buildAt(tb testing.TB, src, name string) (agentd, agentctl string) {
	tb.Helper()
	dir := tb.TempDir()
	for _, cmdName := range []string{"agentd", "agentctl"} {
		out := filepath.Join(dir, name+"-"+cmdName)
		cmd := exec.Command("go", "build", "-o", out, "./cmd/"+cmdName)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("go build %s at %s: %v\n%s", cmdName, src, err, b)
		}
	}
	return filepath.Join(dir, name+"-agentd"), filepath.Join(dir, name+"-agentctl")
}

// exportCommit writes the tree of commit into a temporary directory and
// returns it; "" (with a log line) when git cannot, e.g. outside a clone.
func exportCommit(tb testing.TB, root, commit string) string {
	tb.Helper()
	dir := tb.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	extract := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	extract.Stdin = pipe
	var errs bytes.Buffer
	archive.Stderr = &errs
	if err := extract.Start(); err != nil {
		tb.Logf("no baseline: tar: %v", err)
		return ""
	}
	if err := archive.Run(); err != nil {
		_ = extract.Wait()
		tb.Logf("no baseline: git archive %s: %v %s", commit, err, errs.Bytes())
		return ""
	}
	if err := extract.Wait(); err != nil {
		tb.Logf("no baseline: tar: %v", err)
		return ""
	}
	return dir
}

// unprivileged are the flags that make a node run steps as nobody when
// the benchmark runs as root (an executor running as root refuses steps
// otherwise), in a work directory under shared named name; none
// otherwise.
func unprivileged(tb testing.TB, shared, name string) []string {
	tb.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	work := filepath.Join(shared, "work-"+name)
	if err := os.MkdirAll(work, 0o755); err != nil { // again in each pass
		tb.Fatal(err)
	}
	if err := os.Chmod(work, 0o1777); err != nil {
		tb.Fatal(err)
	}
	return []string{"--executor-run-as", "nobody", "--executor-workdir", work}
}

// sharedTempDir is a temporary directory every user may write to (the
// steps may run as nobody), removed at cleanup.
func sharedTempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "agentic-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		tb.Fatal(err)
	}
	return dir
}
