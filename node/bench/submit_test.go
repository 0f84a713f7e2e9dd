package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
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
// from the base commit (AGENTIC_BENCH_BASE, default c949e8d; "none" skips
// it), the two nodes idle side by side and the submissions alternating
// between them. Reported: p50 (and p90) in ms of each, their ratio, and
// how long agentctl itself took (p50).
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
	}
	vs := []*variant{{name: "new"}}
	vs[0].agentd, vs[0].ctl = buildAt(b, root, "new")
	if base := cmp.Or(os.Getenv("AGENTIC_BENCH_BASE"), baseCommit); base != "none" {
		src := exportCommit(b, root, base)
		if src != "" {
			v := &variant{name: "base"}
			v.agentd, v.ctl = buildAt(b, src, "base")
			vs = append(vs, v)
		}
	}
	markers := sharedTempDir(b)
	for b.Loop() {
		b.StopTimer()
		for _, v := range vs {
			v.a = startAgentdOn(b, v.agentd, filepath.Join(b.TempDir(), v.name), unprivileged(b, markers, v.name)...)
			v.a.waitReady(b, 2*time.Minute)
		}
		n := 0
		for round := range submitWarmup + submitRounds {
			for _, v := range vs {
				n++
				lat, took := submitOne(b, v.a, v.ctl, markers, n)
				b.Logf("%s: submission %d started its step after %s (agentctl ran %s)", v.name, n, lat.Round(time.Millisecond), took.Round(time.Millisecond))
				if round >= submitWarmup {
					v.lat, v.ctlTimes = append(v.lat, lat), append(v.ctlTimes, took)
				}
			}
		}
		for _, v := range vs {
			v.a.stop(b)
		}
		b.StartTimer()
	}
	for _, v := range vs {
		b.ReportMetric(v.lat.quantile(0.5), v.name+"_p50_ms")
		b.ReportMetric(v.lat.quantile(0.9), v.name+"_p90_ms")
		b.ReportMetric(v.ctlTimes.quantile(0.5), v.name+"_agentctl_p50_ms")
	}
	if len(vs) == 2 {
		b.ReportMetric(vs[0].lat.quantile(0.5)/vs[1].lat.quantile(0.5), "new_over_base_p50")
	}
	b.ReportMetric(0, "ns/op")
}

// submitOne submits a one-step plan whose step writes the time it ran to
// markers/m-<n>, and returns the time from agentctl's start until then,
// and how long agentctl ran. It fails unless agentctl succeeds and the
// step runs within a minute.
func submitOne(tb testing.TB, a *agentdProc, ctl, markers string, n int) (lat, took time.Duration) {
	tb.Helper()
	marker := filepath.Join(markers, fmt.Sprintf("m-%d", n))
	plan := filepath.Join(markers, fmt.Sprintf("plan-%d.json", n))
	body := fmt.Sprintf(`{"goal": "submit to start %d", "steps": [{"id": "only", "run": "date +%%s%%N > %s"}]}`, n, marker)
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(ctl, "goal", "submit", "-f", plan)
	cmd.Env = append(os.Environ(), "NATS_URL="+a.natsURL, "AGENTIC_CREDS="+filepath.Join(a.data, "operator.creds"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("agentctl goal submit: %v\n%s", err, stderr.Bytes())
	}
	took = time.Since(start)
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
	return time.Unix(0, ns).Sub(start), took
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
	if err := os.Mkdir(work, 0o755); err != nil {
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
