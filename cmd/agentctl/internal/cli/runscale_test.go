package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// Tests against a real node: agentd's roles in-process (nodetest), the
// CLI speaking to it over its NATS server.

// ctl runs agentctl against the node.
func ctl(t *testing.T, n *nodetest.Node, args ...string) result {
	t.Helper()
	stdout := new(syncBuffer)
	var stderr strings.Builder
	full := append([]string{"--server", n.NATSURL(), "--creds", filepath.Join(n.Dir, trust.OperatorCredsFile), "--timeout", "10s"}, args...)
	code := Run(context.Background(), full, Env{
		Stdin: strings.NewReader(""), Stdout: stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" }, Version: "v9.9.9-test",
	})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// wideNoopPlan writes a plan of n independent noop steps s0…s(n-1).
func wideNoopPlan(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "goal: %d noop steps\nsteps:\n", n)
	for i := range n {
		fmt.Fprintf(&b, "  - {id: s%d, kind: noop}\n", i)
	}
	path := filepath.Join(t.TempDir(), "wide.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// submitBig publishes a goal of about 16 KiB with a one-step plan.
func submitBig(n *nodetest.Node, i int) (string, error) {
	run := event.NewID()
	goal := fmt.Sprintf("history %04d: ", i) + strings.Repeat("every answer costs what it holds ", 500)
	d := event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: goal, PlanFile: "steps:\n  - id: a\n    kind: noop\n", PlanName: "one.yaml"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return run, bus.PublishSigned(ctx, n.JS, n.Operator, d)
}

// stepRows counts the rows of run show's step table (steps sN).
var stepRow = regexp.MustCompile(`(?m)^s\d+ +succeeded +1 `)

// More runs than one reply carries, and a run whose steps do not fit one
// either: run list, run list -o json and run show answer, and run list
// pages through every run that existed when it began, once, in order,
// while runs are submitted.
func TestRunListAndShowAtScale(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	var before []string
	for i := range 80 {
		id, err := submitBig(n, i)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, id)
	}
	r := ctl(t, n, "goal", "submit", "-f", wideNoopPlan(t, 5000), "--wait")
	if r.code != 0 || !strings.Contains(r.stdout, "5000/5000") {
		t.Fatalf("goal submit --wait of 5,000 steps = %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	largest := regexp.MustCompile(`run ([0-9a-f-]{36}) submitted`).FindStringSubmatch(r.stdout)[1]
	before = append(before, largest)
	for _, id := range before {
		poll.Eventually(t, 60*time.Second, "run finished", func() bool {
			s, err := n.API.RunSummary(context.Background(), id)
			return err == nil && finished(s.Status)
		})
	}

	// Text: the default limit, and the command for the next page.
	r = ctl(t, n, "run", "list")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1+defaultRunListLimit || !strings.Contains(r.stdout, largest+"  succeeded  5000/5000") {
		t.Fatalf("run list = %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	more := regexp.MustCompile(`^more: agentctl run list --after (\S+)\n$`).FindStringSubmatch(r.stderr)
	if more == nil {
		t.Fatalf("run list stderr %q: want the next command", r.stderr)
	}
	r = ctl(t, n, "run", "list", "--after", more[1], "-o", "jsonl")
	if r.code != 0 || strings.Count(r.stdout, "\n") != len(before)-defaultRunListLimit || r.stderr != "" {
		t.Fatalf("run list --after = %d: %d lines, want %d\n%s", r.code, strings.Count(r.stdout, "\n"), len(before)-defaultRunListLimit, r.stderr)
	}

	// Every run as one JSON array, while new runs arrive.
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for i := 1000; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := submitBig(n, i); err != nil {
				done <- err
				return
			}
		}
	}()
	r = ctl(t, n, "run", "list", "--limit", "0", "-o", "json")
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var all []api.RunSummary
	if err := json.Unmarshal([]byte(r.stdout), &all); r.code != 0 || err != nil {
		t.Fatalf("run list -o json = %d %v\n%s", r.code, err, r.stderr)
	}
	if len(r.stdout) <= 1<<20 {
		t.Fatalf("run list -o json is %d bytes: the test needs more than one reply's worth", len(r.stdout))
	}
	seen := map[string]int{}
	for i, s := range all {
		if seen[s.ID]++; seen[s.ID] > 1 {
			t.Fatalf("run %s listed twice", s.ID)
		}
		if i > 0 {
			p := all[i-1]
			if c := p.CreatedAt.Compare(s.CreatedAt); c < 0 || c == 0 && p.ID <= s.ID {
				t.Fatalf("out of order at %d: %s then %s", i, p.ID, s.ID)
			}
		}
	}
	for _, id := range before {
		if seen[id] != 1 {
			t.Fatalf("run %s listed %d times, want once", id, seen[id])
		}
	}

	// run show of the largest run: every step, in text and in JSON.
	r = ctl(t, n, "run", "show", largest[:13])
	if got := len(stepRow.FindAllString(r.stdout, -1)); r.code != 0 || got != 5000 {
		t.Fatalf("run show: exit %d, %d step rows, want 5000\n%s", r.code, got, r.stderr)
	}
	r = ctl(t, n, "run", "show", largest, "-o", "json")
	var run api.Run
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || len(run.Steps) != 5000 || run.Steps[4999].ID != "s4999" {
		t.Fatalf("run show -o json: %v, %d steps", err, len(run.Steps))
	}
}

// Errors of the node reach the user as errors with a hint, not timeouts.
func TestRunErrorsFromANode(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	for _, c := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"run", "show", "ffffffff"}, `error: api: not found: no run matches "ffffffff"` + "\nhint: list them with: agentctl run list\n"},
		{[]string{"run", "cancel", "ffffffff"}, `error: api: not found: no run matches "ffffffff"` + "\nhint: list them with: agentctl run list\n"},
		{[]string{"run", "list", "--after", "garbage"}, "error: api: bad request: after: "},
		{[]string{"run", "list", "--before", "garbage"}, "error: api: bad request: before: "},
	} {
		r := ctl(t, n, c.args...)
		if r.code != ExitError || !strings.HasPrefix(r.stderr, c.wantErr) || !strings.Contains(r.stderr, "\nhint: ") || strings.Contains(r.stderr, "timeout") {
			t.Errorf("%v = %d %q, want exit 1 with %q and a hint", c.args, r.code, r.stderr, c.wantErr)
		}
	}
}

// A plan of 10,000 steps (the plan limit): goal submit --wait returns with
// its result, run show shows every step, and ledger export exports every
// record (the plan's records carry messages larger than a page).
func TestTenThousandSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10,000 steps")
	}
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	r := ctl(t, n, "goal", "submit", "-f", wideNoopPlan(t, 10_000), "--wait")
	if r.code != 0 || !regexp.MustCompile(`steps +10000/10000 +\(succeeded 10000\)\n.* run +succeeded\n$`).MatchString(r.stdout) {
		t.Fatalf("goal submit --wait = %d\n%s\n%s", r.code, tail(r.stdout), r.stderr)
	}
	id := regexp.MustCompile(`run ([0-9a-f-]{36}) submitted`).FindStringSubmatch(r.stdout)[1]
	r = ctl(t, n, "run", "show", id)
	if got := len(stepRow.FindAllString(r.stdout, -1)); r.code != 0 || got != 10_000 {
		t.Fatalf("run show: exit %d, %d step rows, want 10000\n%s", r.code, got, r.stderr)
	}
	r = ctl(t, n, "run", "list", "-o", "json")
	var runs []api.RunSummary
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 || runs[0].Steps != 10_000 || api.Done(runs[0]) != 10_000 {
		t.Fatalf("run list -o json: %v %+v", err, runs)
	}

	v, err := n.API.LedgerVerify(context.Background())
	if err != nil || !v.OK {
		t.Fatalf("ledger verify: %+v %v", v, err)
	}
	file := filepath.Join(t.TempDir(), "ledger.jsonl")
	if r = ctl(t, n, "ledger", "export", "-f", file); r.code != 0 {
		t.Fatalf("ledger export = %d %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if uint64(len(lines)) < v.Events {
		t.Fatalf("ledger export: %d lines, the ledger had %d records", len(lines), v.Events)
	}
	for i, l := range lines {
		var rec struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Seq != uint64(i+1) {
			t.Fatalf("export line %d: seq %d, %v", i+1, rec.Seq, err)
		}
	}
}

// tail is the last lines of s, for failure messages.
func tail(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}
