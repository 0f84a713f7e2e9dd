package cli

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
)

const (
	runL = "0190cccc-0000-7000-8000-000000000004" // has output
	runM = "0190dddd-0000-7000-8000-000000000005" // has none
)

func logsRuns(status string) []api.Run {
	return []api.Run{
		{ID: runL, Goal: "logs", Status: event.RunStatus(status), Revision: 1, Steps: []api.Step{{ID: "build"}, {ID: "test"}, {ID: "test.unit"}}},
		{ID: runM, Goal: "quiet", Status: "succeeded", Revision: 1, Steps: []api.Step{{ID: "noop"}}},
	}
}

// publishLog publishes one chunk the way the executor does.
func (h *harness) publishLog(run, step string, attempt int, stream, data string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg := &nats.Msg{Subject: bus.LogSubject(run, step), Data: []byte(data), Header: nats.Header{
		"Agentic-Stream": []string{stream}, "Agentic-Attempt": []string{strconv.Itoa(attempt)}}}
	if _, err := h.conn.JS.PublishMsg(ctx, msg); err != nil {
		h.t.Fatalf("publish log chunk: %v", err)
	}
}

// logsHarness has a node that knows runL and runM, and runL's output in
// chunks that split lines, interleave steps, and retry step test.
func logsHarness(t *testing.T, status string) *harness {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = logsRuns(status) })
	h.publishLog(runL, "build", 1, "stdout", "compil")
	h.publishLog(runL, "test.unit", 1, "stdout", "ok 1 - parses\nok 2")
	h.publishLog(runA, "build", 1, "stdout", "another run's output\n")
	h.publishLog(runL, "build", 1, "stdout", "ing\nlinking\n")
	h.publishLog(runL, "build", 1, "stderr", "warning: unused\n")
	h.publishLog(runL, "test.unit", 1, "stdout", " - folds\n")
	h.publishLog(runL, "test", 1, "stderr", "FAIL flaky\n")
	h.publishLog(runL, "test", 2, "stdout", "PASS\r\n")
	h.publishLog(runL, "test", 2, "stderr", "done, no newline")
	return h
}

func TestRunLogsText(t *testing.T) {
	h := logsHarness(t, "succeeded")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all steps, prefixed and aligned", []string{"0190cc"}, `test.unit | ok 1 - parses
build     | compiling
build     | linking
build     | warning: unused
test.unit | ok 2 - folds
test      | FAIL flaky
test      | --- attempt 2 ---
test      | PASS
test      | done, no newline
`},
		{"one step: exact subject, no prefix", []string{runL, "test"}, "FAIL flaky\n--- attempt 2 ---\nPASS\ndone, no newline\n"},
		{"a step id with a dot", []string{runL, "test.unit"}, "ok 1 - parses\nok 2 - folds\n"},
		{"one attempt", []string{runL, "test", "--attempt", "2"}, "PASS\ndone, no newline\n"},
		{"one stream", []string{runL, "--stream", "stderr"}, `build     | warning: unused
test      | FAIL flaky
test      | --- attempt 2 ---
test      | done, no newline
`},
		{"both filters", []string{runL, "--attempt", "1", "--stream", "stdout"}, `test.unit | ok 1 - parses
build     | compiling
build     | linking
test.unit | ok 2 - folds
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.run(append([]string{"run", "logs"}, tt.args...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("run logs %v = %+v", tt.args, r)
			}
			if r.stdout != tt.want {
				t.Errorf("run logs %v printed\n%s\nwant\n%s", tt.args, r.stdout, tt.want)
			}
		})
	}
	if n := h.logConsumers(); n != 0 {
		t.Errorf("%d consumers left on %s, want 0 (each run logs deletes its own)", n, bus.LogsStream)
	}
}

// logConsumers counts the consumers of the logs stream.
func (h *harness) logConsumers() int {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := h.conn.JS.Stream(ctx, bus.LogsStream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return info.State.Consumers
}

func TestRunLogsJSON(t *testing.T) {
	h := logsHarness(t, "succeeded")

	r := h.run("run", "logs", runL, "-o", "jsonl")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 8 {
		t.Fatalf("run logs -o jsonl = %+v", r)
	}
	want := `{"run":"` + runL + `","step":"test.unit","attempt":1,"stream":"stdout","line":"ok 1 - parses"}`
	if lines[0] != want {
		t.Errorf("first jsonl line = %s\nwant %s", lines[0], want)
	}
	last := decodeJSON[logLine](t, lines[7])
	if last != (logLine{Run: runL, Step: "test", Attempt: 2, Stream: "stderr", Line: "done, no newline"}) {
		t.Errorf("last jsonl line = %+v", last)
	}
	for _, l := range lines { // the attempt marker is text only
		if strings.Contains(l, "---") {
			t.Errorf("jsonl has a marker line: %s", l)
		}
	}

	r = h.run("run", "logs", runL, "--stream", "stderr", "-o", "json")
	got := decodeJSON[[]logLine](t, r.stdout)
	if r.code != 0 || len(got) != 3 || got[1] != (logLine{Run: runL, Step: "test", Attempt: 1, Stream: "stderr", Line: "FAIL flaky"}) {
		t.Fatalf("run logs -o json = %+v", r)
	}

	r = h.run("run", "logs", runM, "-o", "json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" || r.stderr != "" {
		t.Errorf("no output -o json = %+v, want []", r)
	}
}

func TestRunLogsNoOutput(t *testing.T) {
	h := logsHarness(t, "succeeded")
	r := h.run("run", "logs", runM)
	if r.code != 0 || r.stdout != "" || r.stderr != "no output recorded for run "+runM+"\n" {
		t.Errorf("run without output = %+v", r)
	}
	r = h.run("run", "logs", runL, "build", "--attempt", "3")
	if r.code != 0 || r.stdout != "" || r.stderr != "no output recorded for step build of run "+runL+" (attempt 3)\n" {
		t.Errorf("filter matching nothing = %+v", r)
	}
}

func TestRunLogsErrors(t *testing.T) {
	h := logsHarness(t, "succeeded")
	r := h.run("run", "logs", "ffff")
	if r.code != ExitError || r.stdout != "" || !strings.Contains(r.stderr, `no run matches "ffff"`) ||
		!strings.Contains(r.stderr, "\nhint: list them with: agentctl run list\n") {
		t.Errorf("unknown run = %+v", r)
	}
	r = h.run("run", "logs", runL, "deploy")
	if r.code != ExitError || r.stderr != "error: run "+runL+` has no step "deploy" and no output for one`+"\nhint: its steps: build, test, test.unit\n" {
		t.Errorf("unknown step = %+v", r)
	}
	for _, argv := range [][]string{
		{"run", "logs"},
		{"run", "logs", runL, "build", "extra"},
		{"run", "logs", runL, "build.*"},
		{"run", "logs", runL, ">"},
		{"run", "logs", runL, ".."},
		{"run", "logs", runL, "a..b"},
		{"run", "logs", runL, "--stream", "both"},
		{"run", "logs", runL, "--attempt", "-1"},
		{"run", "logs", runL, "--follow", "-o", "json"},
	} {
		if r := h.run(argv...); r.code != ExitUsage || !strings.HasPrefix(r.stderr, "error: ") {
			t.Errorf("agentctl %v = %+v, want a usage error", argv, r)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.conn.JS.DeleteStream(ctx, bus.LogsStream); err != nil {
		t.Fatal(err)
	}
	r = h.run("run", "logs", runL)
	if r.code != ExitError || !strings.Contains(r.stderr, "error: no stream AGENTIC_LOGS on "+h.url) ||
		!strings.Contains(r.stderr, "\nhint: agentd creates it when it starts") {
		t.Errorf("no logs stream = %+v", r)
	}
}

func TestRunLogsFollow(t *testing.T) {
	h := logsHarness(t, "running")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := new(syncBuffer)
	done := make(chan result, 1)
	go func() { done <- h.runCtx(ctx, out, "run", "logs", runL[:8], "build", "--follow") }()

	poll.Eventually(t, 10*time.Second, "the stored output", func() bool { return out.String() == "compiling\nlinking\nwarning: unused\n" })
	h.publishLog(runL, "build", 1, "stdout", "deployed\nprogress 50%")
	poll.Eventually(t, 10*time.Second, "output published while following", func() bool { return strings.HasSuffix(out.String(), "unused\ndeployed\n") })
	// A partial line is printed once the step has been silent a while.
	poll.Eventually(t, 10*time.Second, "the partial line", func() bool { return strings.HasSuffix(out.String(), "deployed\nprogress 50%\n") })
	select {
	case r := <-done:
		t.Fatalf("follow of a running run ended by itself: %+v", r)
	default:
	}
	// A partial line is held; the whole line after it (delivered in order)
	// shows it has arrived; Ctrl-C prints it.
	h.publishLog(runL, "build", 1, "stdout", "held")
	h.publishLog(runL, "build", 1, "stderr", "after\n")
	poll.Eventually(t, 10*time.Second, "the line after the partial one", func() bool { return strings.HasSuffix(out.String(), "%\nafter\n") })
	cancel() // Ctrl-C
	r := <-done
	if r.code != 0 || r.stderr != "" || !strings.HasSuffix(out.String(), "after\nheld\n") {
		t.Fatalf("follow ended with %+v, output %q", r, out.String())
	}
}

func TestRunLogsFollowStopsWhenRunFinished(t *testing.T) {
	h := logsHarness(t, "running")
	out := new(syncBuffer)
	done := make(chan result, 1)
	go func() { done <- h.runCtx(context.Background(), out, "run", "logs", runL, "-o", "jsonl", "--follow") }()

	poll.Eventually(t, 10*time.Second, "the stored output", func() bool { return strings.Count(out.String(), "\n") == 7 })
	h.publishLog(runL, "build", 1, "stdout", "last words\n")
	h.node.with(func(f *fakeNode) { f.runs[0].Status = "succeeded" })
	var r result
	poll.Eventually(t, 10*time.Second, "follow to stop by itself", func() bool {
		select {
		case r = <-done:
			return true
		default:
			return false
		}
	})
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 9 || r.stderr != "" {
		t.Fatalf("follow of a finished run = %+v", r)
	}
	if got := decodeJSON[logLine](t, lines[7]); got.Line != "last words" {
		t.Errorf("line published while following = %+v", got)
	}
}

func TestLogPrinterLongLine(t *testing.T) {
	var out bytes.Buffer
	a := newApp(Env{Stdout: &out, Getenv: func(string) string { return "" }})
	a.output = formatJSONL
	p := newLogPrinter(a, runL, false, nil)
	k := logKey{step: "s", attempt: 1, stream: "stdout"}
	long := strings.Repeat("x", maxLogLine+10)
	if err := p.chunk(k, []byte(long[:100])); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("a partial line was printed: %q", out.String())
	}
	if err := p.chunk(k, []byte(long[100:]+"\nnext")); err != nil {
		t.Fatal(err)
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("printed %d lines, want 3 (a long line in two pieces, then the partial one)", len(lines))
	}
	for i, n := range []int{maxLogLine, 10, 4} {
		if got := decodeJSON[logLine](t, lines[i]); len(got.Line) != n {
			t.Errorf("line %d has %d bytes, want %d", i, len(got.Line), n)
		}
	}
}

func TestRunLogsHelp(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "logs", "--help")
	for _, want := range []string{"agentctl run logs RUN [STEP] [flags]", "Examples:", "--follow", "--attempt", "--stream", `{"run","step","attempt",`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run logs --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if r = h.run("run", "--help"); !strings.Contains(r.stdout, "logs        Print the output of a run's steps") {
		t.Errorf("run --help does not list logs:\n%s", r.stdout)
	}
}
