package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

// ctlTimeout bounds one agentctl invocation (goal submit --wait included).
const ctlTimeout = 90 * time.Second

// ctlResult is what one agentctl invocation did.
type ctlResult struct {
	args   []string
	code   int
	stdout string
	stderr string
}

func (r ctlResult) String() string {
	return fmt.Sprintf("agentctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// ctl runs the agentctl binary against a, with a's operator credentials,
// and returns what it did. It fails t only if agentctl could not run.
func (a *agentd) ctl(args ...string) ctlResult {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin.agentctl, args...)
	cmd.Dir = a.dir
	cmd.Env = append(hermeticEnv(), "NATS_URL="+a.natsURL(), "AGENTIC_CREDS="+a.creds())
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := ctlResult{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		a.t.Fatalf("agentctl %s: no answer after %v\nstderr:\n%s", strings.Join(args, " "), ctlTimeout, res.stderr)
	}
	if err != nil && cmd.ProcessState == nil {
		a.t.Fatalf("agentctl %s: %v", strings.Join(args, " "), err)
	}
	res.code = cmd.ProcessState.ExitCode()
	return res
}

// mustCtl runs agentctl and fails t unless it exits 0; it returns stdout.
func (a *agentd) mustCtl(args ...string) string {
	a.t.Helper()
	r := a.ctl(args...)
	if r.code != 0 {
		a.t.Fatalf("want exit 0, got %s", r)
	}
	return r.stdout
}

// runView is the documented run object (docs/cli.md), decoded on the
// test's side so that a renamed field shows up as a failure.
type runView struct {
	ID         string     `json:"id"`
	Goal       string     `json:"goal"`
	Status     string     `json:"status"`
	Reason     string     `json:"reason"`
	Revision   int        `json:"revision"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Steps      []stepView `json:"steps"`
}

// runSummary is the documented run summary (run list -o json).
type runSummary struct {
	ID         string         `json:"id"`
	Goal       string         `json:"goal"`
	Status     string         `json:"status"`
	Reason     string         `json:"reason"`
	Revision   int            `json:"revision"`
	Steps      int            `json:"steps"`
	StepCounts map[string]int `json:"step_counts"`
	CreatedAt  time.Time      `json:"created_at"`
	FinishedAt *time.Time     `json:"finished_at"`
}

// stepView is one element of runView.Steps.
type stepView struct {
	ID         string     `json:"id"`
	Title      string     `json:"title"`
	Subgoal    string     `json:"subgoal"`
	Kind       string     `json:"kind"`
	Status     string     `json:"status"`
	Attempt    int        `json:"attempt"`
	Node       string     `json:"node"`
	ExitCode   *int       `json:"exit_code"`
	DependsOn  []string   `json:"depends_on"`
	Error      string     `json:"error"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// step returns the step with id, failing t if the run has none.
func (r runView) step(t *testing.T, id string) stepView {
	t.Helper()
	for _, s := range r.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("run %s has no step %q:\n%s", r.ID, id, r.dump())
	return stepView{}
}

// lookup returns the step with id, if any (for polling).
func (r runView) lookup(id string) (stepView, bool) {
	for _, s := range r.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return stepView{}, false
}

// done reports whether the run reached a final status.
func (r runView) done() bool {
	switch r.Status {
	case "succeeded", "failed", "cancelled":
		return true
	}
	return false
}

// dump is a readable summary for failure messages.
func (r runView) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s status %s reason %q revision %d\n", r.ID, r.Status, r.Reason, r.Revision)
	for _, s := range r.Steps {
		exit := "-"
		if s.ExitCode != nil {
			exit = fmt.Sprint(*s.ExitCode)
		}
		fmt.Fprintf(&b, "  %-10s %-10s attempt %d node %q exit %s error %q\n", s.ID, s.Status, s.Attempt, s.Node, exit, s.Error)
	}
	return b.String()
}

// tryRunShow asks for one run; an error is returned, not fatal, so that
// callers can poll while agentd (re)starts.
func (a *agentd) tryRunShow(id string) (runView, error) {
	a.t.Helper()
	r := a.ctl("run", "show", id, "-o", "json")
	if r.code != 0 {
		return runView{}, fmt.Errorf("%s", r)
	}
	var v runView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		return runView{}, fmt.Errorf("run show -o json: %w\n%s", err, r.stdout)
	}
	return v, nil
}

// runShow asks for one run and fails t if that does not work.
func (a *agentd) runShow(id string) runView {
	a.t.Helper()
	v, err := a.tryRunShow(id)
	if err != nil {
		a.t.Fatal(err)
	}
	return v
}

// waitRun polls the run until it has finished and returns it.
func (a *agentd) waitRun(id string, timeout time.Duration) runView {
	a.t.Helper()
	return a.waitDone(id, timeout, "", a.tryRunShow)
}

// waitDone polls read until the run has finished and returns it; where
// says whose view read gives, for the failure.
func (a *agentd) waitDone(id string, timeout time.Duration, where string, read func(string) (runView, error)) runView {
	a.t.Helper()
	var v runView
	var lastErr error
	err := poll.Wait(timeout, func() bool {
		v, lastErr = read(id)
		return lastErr == nil && v.done()
	})
	if err != nil {
		a.t.Fatalf("%v waiting for run %s to finish%s; last: %v %s", err, id, where, lastErr, v.dump())
	}
	return v
}

// submit submits a plan file without waiting and returns the run id.
func (a *agentd) submit(planFile string) string {
	a.t.Helper()
	id := strings.TrimSpace(a.mustCtl("goal", "submit", "-f", planFile))
	if len(id) != 36 || strings.Count(id, "-") != 4 {
		a.t.Fatalf("goal submit printed %q, want a run id (a UUID)", id)
	}
	return id
}

// auditLine is the documented audit line object.
type auditLine struct {
	Seq     uint64          `json:"seq"`
	Subject string          `json:"subject"`
	Type    string          `json:"type"`
	Run     string          `json:"run"`
	Node    string          `json:"node"`
	Time    time.Time       `json:"time"`
	Data    json.RawMessage `json:"data"`
	JWS     string          `json:"jws"`

	raw map[string]json.RawMessage // every key the line had
}

// taskData holds the fields of task.* payloads the tests look at.
type taskData struct {
	Step     string `json:"step"`
	Attempt  int    `json:"attempt"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
}

func (l auditLine) task(t *testing.T) taskData {
	t.Helper()
	var d taskData
	if err := json.Unmarshal(l.Data, &d); err != nil {
		t.Fatalf("audit seq %d (%s): data: %v: %s", l.Seq, l.Type, err, l.Data)
	}
	return d
}

// audit runs audit tail -o jsonl with extra args and decodes every line.
func (a *agentd) audit(extra ...string) []auditLine {
	a.t.Helper()
	out := a.mustCtl(append([]string{"audit", "tail", "-o", "jsonl"}, extra...)...)
	var lines []auditLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			a.t.Fatalf("audit tail -o jsonl: empty line in:\n%s", out)
		}
		var l auditLine
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			a.t.Fatalf("audit tail -o jsonl: line %q: %v", text, err)
		}
		if err := json.Unmarshal([]byte(text), &l.raw); err != nil {
			a.t.Fatalf("audit tail -o jsonl: line %q: %v", text, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		a.t.Fatal(err)
	}
	return lines
}

// taskFinished returns the task.finished lines of run for step.
func taskFinished(t *testing.T, lines []auditLine, run, step string) []taskData {
	t.Helper()
	var out []taskData
	for _, l := range lines {
		if l.Type != "task.finished" || l.Run != run {
			continue
		}
		if d := l.task(t); d.Step == step {
			out = append(out, d)
		}
	}
	return out
}

// verifyResult is the documented ledger verify -o json object.
type verifyResult struct {
	OK          bool   `json:"ok"`
	Events      uint64 `json:"events"`
	Head        string `json:"head"`
	FirstBadSeq uint64 `json:"first_bad_seq"`
	Error       string `json:"error"`
	Node        string `json:"node"`
}

// verifyLedger runs ledger verify -o json and fails t unless the chain is
// good and holds events.
func (a *agentd) verifyLedger() verifyResult {
	a.t.Helper()
	r := a.ctl("ledger", "verify", "-o", "json")
	var v verifyResult
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		a.t.Fatalf("ledger verify -o json: %v\n%s", err, r)
	}
	if r.code != 0 || !v.OK || v.Events == 0 || v.Head == "" {
		a.t.Fatalf("ledger verify: want ok with events, got %+v\n%s", v, r)
	}
	return v
}

// ownRun is run id as this node's own ledger holds it, read from its ui
// role's HTTP API (GET /api/runs/{id}) — not from whichever ledger node
// answers agentctl's query, which may be one the test stopped (its
// requests then time out) or one still catching up after it was continued
// (its answers are then old). The node must run the ui role.
func (a *agentd) ownRun(id string) (runView, error) {
	code, body, err := a.get("/api/runs/" + url.PathEscape(id))
	if err != nil {
		return runView{}, err
	}
	if code != http.StatusOK {
		return runView{}, fmt.Errorf("GET /api/runs/%s: %d %s", id, code, body)
	}
	var d struct {
		Run   runSummary `json:"run"`
		Steps struct {
			Items []stepView `json:"items"`
			End   bool       `json:"end"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return runView{}, fmt.Errorf("GET /api/runs/%s: %w\n%s", id, err, body)
	}
	if !d.Steps.End {
		return runView{}, fmt.Errorf("GET /api/runs/%s: the steps do not fit one page (the tests' runs are small)", id)
	}
	r := d.Run
	return runView{ID: r.ID, Goal: r.Goal, Status: r.Status, Reason: r.Reason, Revision: r.Revision,
		CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, Steps: d.Steps.Items}, nil
}

// waitOwnRun polls ownRun until the run has finished and returns it.
func (a *agentd) waitOwnRun(id string, timeout time.Duration) runView {
	a.t.Helper()
	return a.waitDone(id, timeout, " in "+a.name+"'s ledger", a.ownRun)
}

// appliedStreamSeq is the last stream sequence this node's ledger has
// folded (agentic_ledger_applied_stream_seq on its /metrics).
func (a *agentd) appliedStreamSeq() (uint64, error) {
	_, body, err := a.get("/metrics")
	if err != nil {
		return 0, err
	}
	const name = "agentic_ledger_applied_stream_seq"
	for _, l := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(l, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') { // a line of it: name, labels, value
			continue
		}
		v := l[strings.LastIndexByte(l, ' ')+1:]
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%s's /metrics: %q: %w", a.name, l, err)
		}
		return uint64(f), nil
	}
	return 0, fmt.Errorf("%s's /metrics has no %s", a.name, name)
}
