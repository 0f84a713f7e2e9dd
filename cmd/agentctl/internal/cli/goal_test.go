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

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/planner/plan"
	"github.com/nats-io/nats.go"
)

const goodPlan = `goal: Say hello
steps:
  - id: hello
    run: echo hello
  - id: bye
    run: echo bye
    depends_on: [hello]
`

const badPlan = `goal: Broken
steps:
  - id: a
    run: echo a
    depends_on: [nope]
  - id: a
    run: echo again
`

func writePlan(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGoalSubmitMalformedPlanPublishesNothing(t *testing.T) {
	h := newHarness(t).withNode()
	// Watch the event subjects on core NATS too: nothing may even be sent.
	seen := make(chan *nats.Msg, 10)
	sub, err := h.conn.NC.ChanSubscribe(event.SubjectAll, seen)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := h.conn.NC.Flush(); err != nil {
		t.Fatal(err)
	}

	path := writePlan(t, "plan.yaml", badPlan)
	r := h.run("goal", "submit", "-f", path)
	if r.code != ExitError || r.stdout != "" {
		t.Fatalf("submit bad plan = %+v", r)
	}
	if !strings.HasPrefix(r.stderr, "error: plan "+path+" has ") || !strings.Contains(r.stderr, "nothing was submitted") {
		t.Errorf("stderr = %q", r.stderr)
	}
	// Every problem is listed with its location in the file.
	located := regexp.MustCompile(`(?m)^  .*plan\.yaml:\d+:\d+: `)
	if n := len(located.FindAllString(r.stderr, -1)); n < 2 {
		t.Errorf("want at least 2 located problems, got %d:\n%s", n, r.stderr)
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events in the stream after a malformed plan", n)
	}
	// A round trip on the connection orders any stray publish before it.
	if err := h.conn.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-seen:
		t.Fatalf("published %s after a malformed plan", m.Subject)
	default:
	}
}

func TestGoalSubmitPlan(t *testing.T) {
	h := newHarness(t).withNode()
	path := writePlan(t, "hello.yaml", goodPlan)
	r := h.run("goal", "submit", "-f", path)
	runID := strings.TrimSpace(r.stdout)
	if r.code != 0 || !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(runID) {
		t.Fatalf("submit = %+v", r)
	}
	evs := h.events()
	if len(evs) != 1 || evs[0].Type != event.GoalSubmitted || evs[0].Signer.ID != "alice" || len(evs[0].Events) != 1 {
		t.Fatalf("published %+v", evs)
	}
	ev := evs[0].Events[0]
	var data event.GoalSubmittedData
	if err := ev.Decode(&data); err != nil {
		t.Fatal(err)
	}
	if ev.Run != runID || data.Goal != "Say hello" || data.PlanFile != goodPlan || data.PlanName != "hello.yaml" || data.Text != "" {
		t.Errorf("event run %s data %+v", ev.Run, data)
	}
	// The plan travels with the file, as a planner would propose it: the
	// leader plans the run from the goal.
	if p := data.Plan; p == nil || !plan.IsNormal(p) || p.Goal != "Say hello" || len(p.Steps) != 2 || p.Steps[1].ID != "bye" {
		t.Errorf("the goal's plan = %+v, want hello.yaml's in normal form", data.Plan)
	}
}

// TestGoalSubmitPlanTooLargeToCarry: a plan file whose plan, next to the
// file, would make the goal larger than one event goes without the plan
// (a planner plans it); the file alone still fits.
func TestGoalSubmitPlanTooLargeToCarry(t *testing.T) {
	h := newHarness(t).withNode()
	var b strings.Builder
	b.WriteString("goal: Many\nsteps:\n")
	for i := range 7000 {
		fmt.Fprintf(&b, "  - id: s%d\n    run: echo %d\n", i, i)
	}
	path := writePlan(t, "many.yaml", b.String())
	if r := h.run("goal", "submit", "-f", path); r.code != 0 {
		t.Fatalf("submit = %+v", r)
	}
	evs := h.events()
	if len(evs) != 1 || len(evs[0].Events) != 1 {
		t.Fatalf("published %+v", evs)
	}
	var data event.GoalSubmittedData
	if err := evs[0].Events[0].Decode(&data); err != nil {
		t.Fatal(err)
	}
	if data.PlanFile != b.String() || data.Plan != nil {
		t.Errorf("plan file %d bytes (want %d), plan carried: %v", len(data.PlanFile), b.Len(), data.Plan != nil)
	}
}

func TestGoalSubmitTextJSON(t *testing.T) {
	h := newHarness(t).withNode()
	r := h.run("goal", "submit", "-o", "json", "upgrade", "the", "database")
	run := decodeJSON[api.Run](t, r.stdout)
	if r.code != 0 || run.Status != "submitted" || run.Goal != "upgrade the database" || run.Steps == nil {
		t.Fatalf("submit -o json = %+v", r)
	}
	evs := h.events()
	if len(evs) != 1 {
		t.Fatalf("%d messages", len(evs))
	}
	var data event.GoalSubmittedData
	if err := evs[0].Events[0].Decode(&data); err != nil {
		t.Fatal(err)
	}
	if evs[0].Events[0].Run != run.ID || data.Text != "upgrade the database" || data.PlanFile != "" {
		t.Errorf("event %+v", data)
	}
}

func TestGoalSubmitFromStdin(t *testing.T) {
	h := newHarness(t).withNode()
	var stderr strings.Builder
	stdout := new(syncBuffer)
	code := Run(context.Background(), []string{"--server", h.url, "--creds", h.creds, "goal", "submit", "-f", "-"},
		Env{Stdin: strings.NewReader(goodPlan), Stdout: stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	if code != 0 || len(h.events()) != 1 {
		t.Fatalf("submit from stdin = %d %q %q", code, stdout, stderr.String())
	}
}

// script returns a progress function walking through states; the run is
// unknown on the first call, as when no node has folded it yet.
func script(final string) func(id string, call int) (*api.Run, error) {
	t0 := time.Now()
	states := []api.Run{
		{Status: "planning", Steps: []api.Step{}},
		{Status: "running", Revision: 1, Steps: []api.Step{{ID: "hello", Status: "running", Attempt: 1, Node: "node-a", StartedAt: &t0}, {ID: "bye", Status: "pending"}}},
		{Status: "running", Revision: 1, Steps: []api.Step{{ID: "hello", Status: "succeeded", Attempt: 1, Node: "node-a", ExitCode: ptr(0), StartedAt: &t0, FinishedAt: &t0}, {ID: "bye", Status: "running", Attempt: 1, Node: "node-b"}}},
		{Status: event.RunStatus(final), Reason: map[string]string{"failed": "step bye failed", "cancelled": "by alice"}[final], Revision: 1, Steps: []api.Step{{ID: "hello", Status: "succeeded", Attempt: 1, Node: "node-a", ExitCode: ptr(0)}, {ID: "bye", Status: map[string]string{"succeeded": "succeeded", "failed": "failed", "cancelled": "cancelled"}[final], Attempt: 1, Node: "node-b"}}},
	}
	return func(id string, call int) (*api.Run, error) {
		if call == 0 {
			return nil, api.ErrNotFound
		}
		r := states[min(call-1, len(states)-1)]
		r.ID = id
		return &r, nil
	}
}

func TestGoalSubmitWait(t *testing.T) {
	tests := []struct {
		final    string
		wantCode int
	}{
		{"succeeded", ExitOK},
		{"failed", ExitRunFailed},
		{"cancelled", ExitRunCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.final, func(t *testing.T) {
			h := newHarness(t).withNode()
			h.node.with(func(f *fakeNode) { f.progress = script(tt.final) })
			r := h.run("goal", "submit", "-f", writePlan(t, "hello.yaml", goodPlan), "--wait")
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %+v", r.code, tt.wantCode, r)
			}
			line := `\d\d:\d\d:\d\d `
			for _, want := range []string{
				line + `run [0-9a-f-]{36} submitted$`,
				line + `run +planning$`,
				line + `run +running$`,
				line + `hello +running +\(attempt 1 on node-a\)$`,
				line + `bye +pending$`,
				line + `hello +succeeded +\(attempt 1 on node-a, exit 0, 0s\)$`,
				line + `bye +running +\(attempt 1 on node-b\)$`,
				line + `run +` + tt.final,
			} {
				if !regexp.MustCompile(`(?m)^` + want).MatchString(r.stdout) {
					t.Errorf("progress lacks /%s/:\n%s", want, r.stdout)
				}
			}
			if !regexp.MustCompile(`run +` + tt.final + `.*\n$`).MatchString(r.stdout) {
				t.Errorf("the run's end is not the last line:\n%s", r.stdout)
			}
			if n := len(regexp.MustCompile(`hello +running`).FindAllString(r.stdout, -1)); n != 1 {
				t.Errorf("an unchanged step was printed %d times", n)
			}
			if tt.final != "succeeded" && !strings.Contains(r.stderr, "error: run ") {
				t.Errorf("stderr = %q", r.stderr)
			}
		})
	}
}

func TestGoalSubmitWaitJSONL(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.progress = script("succeeded") })
	r := h.run("goal", "submit", "-o", "jsonl", "--wait", "say hello")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 4 {
		t.Fatalf("jsonl wait = %+v", r)
	}
	statuses := []string{}
	for _, l := range lines {
		var run api.RunSummary
		if err := json.Unmarshal([]byte(l), &run); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		statuses = append(statuses, fmt.Sprintf("%s %d/%d", run.Status, api.Done(run), run.Steps))
	}
	if strings.Join(statuses, ",") != "planning 0/0,running 0/2,running 1/2,succeeded 2/2" {
		t.Errorf("statuses %v", statuses)
	}

	h.node.with(func(f *fakeNode) { f.progress = script("failed") })
	r = h.run("goal", "submit", "-o", "json", "--wait", "say hello")
	if run := decodeJSON[api.Run](t, r.stdout); r.code != ExitRunFailed || run.Status != "failed" || len(run.Steps) != 2 {
		t.Errorf("json wait = %+v", r)
	}
}

// A run bigger than smallRun is followed by its summary alone: progress
// from the step counts, never a page of steps per poll.
func TestGoalSubmitWaitBigRun(t *testing.T) {
	h := newHarness(t).withNode()
	steps := func(done int) []api.Step {
		out := make([]api.Step, 3*smallRun)
		for i := range out {
			out[i] = api.Step{ID: fmt.Sprintf("s%d", i), Status: "pending"}
			if i < done {
				out[i].Status = "succeeded"
			}
		}
		return out
	}
	h.node.with(func(f *fakeNode) {
		f.progress = func(id string, call int) (*api.Run, error) {
			switch {
			case call == 0:
				return &api.Run{ID: id, Status: "planning", Steps: []api.Step{}}, nil
			case call < 5:
				return &api.Run{ID: id, Status: "running", Revision: 1, Steps: steps(call * 10)}, nil
			}
			return &api.Run{ID: id, Status: "succeeded", Revision: 1, Steps: steps(3 * smallRun)}, nil
		}
	})
	r := h.run("goal", "submit", "--wait", "big")
	if r.code != 0 {
		t.Fatalf("wait = %+v", r)
	}
	line := `(?m)^\d\d:\d\d:\d\d `
	for _, want := range []string{
		line + `run +running$`,
		line + `steps +\d+/600 +\(succeeded \d+, pending \d+\)$`,
		line + `steps +600/600 +\(succeeded 600\)\n.* run +succeeded\n$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("progress lacks /%s/:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "s1 ") {
		t.Errorf("a big run printed step lines:\n%s", r.stdout)
	}
	if n := h.node.requests(api.MethodRunsSteps); n != 0 {
		t.Errorf("%d runs.steps requests while following a big run, want 0", n)
	}
}

func TestGoalSubmitWaitInterrupted(t *testing.T) {
	h := newHarness(t).withNode()
	calls := make(chan struct{}, 100)
	h.node.with(func(f *fakeNode) {
		f.progress = func(id string, call int) (*api.Run, error) {
			calls <- struct{}{}
			return &api.Run{ID: id, Status: "running", Steps: []api.Step{}}, nil
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-calls
		<-calls // following for a while: press Ctrl-C
		cancel()
	}()
	r := h.runCtx(ctx, nil, "goal", "submit", "--wait", "forever")
	if r.code != ExitInterrupted || !strings.Contains(r.stderr, "stopped waiting; run ") || !strings.Contains(r.stderr, "keeps going") {
		t.Fatalf("interrupted wait = %+v", r)
	}
}

// A plan that carries a secret is refused before it is signed, with a hint
// and without echoing the secret; a reference to one is fine.
func TestGoalSubmitRefusesSecrets(t *testing.T) {
	h := newHarness(t).withNode()
	leak := writePlan(t, "leak.yaml", "goal: leak\nsteps:\n  - id: a\n    run: mysql --password=hunter2\n")
	r := h.run("goal", "submit", "-f", leak)
	if r.code != ExitError || !strings.Contains(r.stderr, "secret") || strings.Contains(r.stderr, "hunter2") {
		t.Fatalf("submit leaky plan = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Fatalf("%d events in the stream after a refused plan", n)
	}
	ref := writePlan(t, "ref.yaml", "goal: ref\nsteps:\n  - id: a\n    run: mysql --password=$DB_PASSWORD\n")
	if r := h.run("goal", "submit", "-f", ref); r.code != 0 {
		t.Fatalf("submit plan with a secret reference = %+v", r)
	}
}
