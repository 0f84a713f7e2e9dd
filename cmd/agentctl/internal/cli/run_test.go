package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/api"
)

const (
	runA = "0190aaaa-0000-7000-8000-000000000001"
	runB = "0190aaab-0000-7000-8000-000000000002"
	runC = "0190bbbb-0000-7000-8000-000000000003"
)

func ptr[T any](v T) *T { return &v }

func fixtureRuns() []api.Run {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return []api.Run{
		{ID: runC, Goal: "deploy the app", Status: "running", Revision: 2, CreatedAt: t0.Add(time.Hour), Steps: []api.Step{
			{ID: "announce", Kind: "shell", Status: "succeeded", Attempt: 1, Node: "node-a", ExitCode: ptr(0),
				StartedAt: ptr(t0), FinishedAt: ptr(t0.Add(1500 * time.Millisecond))},
			{ID: "compile", Subgoal: "build", Kind: "shell", Status: "succeeded", Attempt: 1, Node: "node-a", ExitCode: ptr(0),
				DependsOn: []string{"announce"}, StartedAt: ptr(t0), FinishedAt: ptr(t0.Add(2 * time.Second))},
			{ID: "test", Subgoal: "build", Kind: "shell", Status: "failed", Attempt: 2, Node: "node-b", ExitCode: ptr(1),
				DependsOn: []string{"compile"}, Error: "exit status 1", StartedAt: ptr(t0), FinishedAt: ptr(t0.Add(3 * time.Second))},
			{ID: "push", Subgoal: "ship", Kind: "shell", Status: "pending", DependsOn: []string{"test"}},
		}},
		{ID: runB, Goal: "b", Status: "succeeded", Revision: 1, CreatedAt: t0, FinishedAt: ptr(t0.Add(time.Minute)), Steps: []api.Step{}},
		{ID: runA, Goal: "a", Status: "failed", Revision: 1, CreatedAt: t0, Steps: []api.Step{}},
	}
}

func TestRunList(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = fixtureRuns() })

	r := h.run("run", "list")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ID ") || r.stderr != "" {
		t.Fatalf("run list = %+v", r)
	}
	for _, want := range []string{runA, runB, runC, "deploy the app", "running"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run list text lacks %q:\n%s", want, r.stdout)
		}
	}
	// STEPS is done (succeeded or skipped) / total, from the step counts.
	if !containsRow(r.stdout, runC, "running", "2/4", "2026-03-01", fmtTime(fixtureRuns()[0].CreatedAt)[11:], "deploy", "the", "app") {
		t.Errorf("run C row wrong:\n%s", r.stdout)
	}
	if n := h.node.requests(api.MethodRunsList); n != 2 {
		t.Errorf("3 runs in pages of 2 took %d requests, want 2", n)
	}

	r = h.run("run", "list", "-o", "json", "--status", "failed")
	runs := decodeJSON[[]api.RunSummary](t, r.stdout)
	if r.code != 0 || len(runs) != 1 || runs[0].ID != runA || !strings.HasPrefix(r.stdout, "[") {
		t.Fatalf("run list -o json = %+v", r)
	}

	r = h.run("run", "list", "-o", "jsonl", "--limit", "2")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("run list -o jsonl = %+v", r)
	}
	if got := decodeJSON[api.RunSummary](t, lines[1]); got.ID != runB {
		t.Errorf("second jsonl run = %s", got.ID)
	}

	r = h.run("run", "list", "-o", "json", "--status", "paused")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("empty list -o json = %q, want []", r.stdout)
	}
	if r = h.run("run", "list", "--status", "paused"); r.stdout != "no runs\n" {
		t.Errorf("empty list text = %q", r.stdout)
	}
}

// manyRuns is n runs, newest first, one a minute.
func manyRuns(n int) []api.Run {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	runs := make([]api.Run, n)
	for i := range runs {
		runs[i] = api.Run{ID: fmt.Sprintf("0190%04x-0000-7000-8000-%012x", n-i, n-i), Goal: fmt.Sprintf("goal %d", n-i), Status: "succeeded",
			CreatedAt: t0.Add(time.Duration(n-i) * time.Minute), Steps: []api.Step{}}
	}
	return runs
}

func TestRunListPages(t *testing.T) {
	h := newHarness(t).withNode()
	all := manyRuns(7)
	h.node.with(func(f *fakeNode) { f.runs = all })
	ids := func(out string) []string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				got = append(got, decodeJSON[api.RunSummary](t, l).ID)
			}
		}
		return got
	}
	want := func(from, to int) []string {
		var out []string
		for _, r := range all[from:to] {
			out = append(out, r.ID)
		}
		return out
	}

	// --limit 3 over pages of 2: the first three, and the command that lists
	// the rest; that command, run, lists exactly the rest.
	r := h.run("run", "list", "-o", "jsonl", "--limit", "3")
	if r.code != 0 || !slices.Equal(ids(r.stdout), want(0, 3)) {
		t.Fatalf("--limit 3 = %+v", r)
	}
	more := regexp.MustCompile(`^more: agentctl run list --limit 3 --after (\S+)\n$`).FindStringSubmatch(r.stderr)
	if more == nil {
		t.Fatalf("stderr %q: want the next command", r.stderr)
	}
	r = h.run("run", "list", "-o", "jsonl", "--limit", "0", "--after", more[1])
	if r.code != 0 || !slices.Equal(ids(r.stdout), want(3, 7)) || r.stderr != "" {
		t.Fatalf("--after the printed cursor = %+v, want runs 3..6 and no more", r)
	}
	// Every run, several pages, one JSON array exactly as one document.
	r = h.run("run", "list", "-o", "json", "--limit", "0")
	var arr []api.RunSummary
	if err := json.Unmarshal([]byte(r.stdout), &arr); err != nil || len(arr) != 7 {
		t.Fatalf("-o json --limit 0: %v\n%s", err, r.stdout)
	}
	if b, _ := json.MarshalIndent(arr, "", "  "); string(b)+"\n" != r.stdout {
		t.Errorf("-o json written page by page differs from the array indented at once:\n%s", r.stdout)
	}
	// --before: the runs newer than a cursor, newest first, nearest ones
	// when limited, and the command that goes on towards newer runs.
	r = h.run("run", "list", "-o", "jsonl", "--before", "5", "--limit", "3")
	if r.code != 0 || !slices.Equal(ids(r.stdout), want(2, 5)) {
		t.Fatalf("--before 5 --limit 3 = %+v, want runs 2..4", r)
	}
	if !strings.HasSuffix(r.stderr, "--limit 3 --before 2\n") {
		t.Errorf("--before stderr %q: want the command going on with --before", r.stderr)
	}
	// Filters reach the node; the printed command repeats them, times made
	// absolute.
	r = h.run("run", "list", "-o", "jsonl", "--limit", "1", "--goal", "GOAL ", "--since", "2026-03-01T12:02:00Z", "--until", "2026-03-01T12:06:00Z")
	if r.code != 0 || !slices.Equal(ids(r.stdout), want(2, 3)) ||
		!strings.HasPrefix(r.stderr, "more: agentctl run list --goal 'GOAL ' --since 2026-03-01T12:02:00Z --until 2026-03-01T12:06:00Z --limit 1 --after ") {
		t.Fatalf("filtered = %+v", r)
	}
}

func TestRunListErrors(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = manyRuns(3) })
	for _, tt := range []struct {
		args     []string
		code     int
		wantErr  string
		wantHint string
	}{
		{[]string{"--after", "nope"}, ExitError, `bad cursor "nope"`, "hint: use a cursor a listing gave"},
		{[]string{"--status", "lost"}, ExitUsage, `--status "lost": want one of submitted, planning`, ""},
		{[]string{"--since", "yesterday"}, ExitUsage, `--since "yesterday": want an RFC 3339 time`, ""},
		{[]string{"--since", "1h", "--until", "2h"}, ExitUsage, "--since must be before --until", ""},
		{[]string{"--limit", "-1"}, ExitUsage, "--limit must not be negative", ""},
	} {
		r := h.run(append([]string{"run", "list"}, tt.args...)...)
		if r.code != tt.code || r.stdout != "" || !strings.Contains(r.stderr, tt.wantErr) || !strings.Contains(r.stderr, tt.wantHint) {
			t.Errorf("run list %v = %+v, want exit %d with %q and %q", tt.args, r, tt.code, tt.wantErr, tt.wantHint)
		}
	}
}

func TestRunShow(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = fixtureRuns() })

	r := h.run("run", "show", "0190bb")
	if r.code != 0 {
		t.Fatalf("run show by prefix = %+v", r)
	}
	for _, want := range []string{
		"run       " + runC,
		"status    running (revision 2)",
		"STEP", "NEEDS",
		"announce", "1.5s",
		"build\n",
		"├─ compile", "└─ test", "└─ push",
		"node-b", "compile\n",
		"test (attempt 2): exit status 1",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run show lacks %q:\n%s", want, r.stdout)
		}
	}
	// "test" row: failed, attempt 2, node-b, exit 1, 3s, needs compile.
	if !containsRow(r.stdout, "└─ test", "failed", "2", "node-b", "1", "3s", "compile") {
		t.Errorf("test row wrong:\n%s", r.stdout)
	}

	if n := h.node.requests(api.MethodRunsSteps); n != 1 {
		t.Errorf("4 steps in pages of 2: %d runs.steps requests, want 1", n)
	}

	r = h.run("run", "show", runC, "-o", "json")
	got := decodeJSON[api.Run](t, r.stdout)
	if r.code != 0 || got.ID != runC || len(got.Steps) != 4 || *got.Steps[2].ExitCode != 1 {
		t.Fatalf("run show -o json = %+v", r)
	}
	// The documented JSON keys are present.
	for _, key := range []string{`"id"`, `"goal"`, `"status"`, `"revision"`, `"created_at"`, `"finished_at"`, `"steps"`,
		`"subgoal"`, `"kind"`, `"attempt"`, `"node"`, `"exit_code"`, `"started_at"`} {
		if !strings.Contains(r.stdout, key) {
			t.Errorf("run JSON lacks %s", key)
		}
	}
}

func containsRow(out string, cells ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, cells[0]) {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, cells[0]))
		if strings.Join(fields, " ") == strings.Join(cells[1:], " ") {
			return true
		}
	}
	return false
}

func TestRunShowIDErrors(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = fixtureRuns() })
	tests := []struct {
		id   string
		want string // all of stderr
	}{
		// The candidates of an ambiguous prefix, one per line.
		{"0190aa", "error: api: ambiguous id prefix: \"0190aa\" matches 2 runs:\n  " + runB + "\n  " + runA + "\nhint: give more characters of the id\n"},
		{"ffff", "error: api: not found: no run matches \"ffff\"\nhint: list them with: agentctl run list\n"},
	}
	for _, tt := range tests {
		r := h.run("run", "show", tt.id)
		if r.code != ExitError || r.stdout != "" || r.stderr != tt.want {
			t.Errorf("run show %s = %+v, want exit 1 and stderr\n%s", tt.id, r, tt.want)
		}
	}
}

func TestRunCancel(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.runs = fixtureRuns() })

	r := h.run("run", "cancel", "0190bb", "--reason", "wrong branch")
	if r.code != 0 || !strings.Contains(r.stdout, "cancel requested for run "+runC) {
		t.Fatalf("run cancel = %+v", r)
	}
	evs := h.events()
	if len(evs) != 1 || evs[0].Type != "run.cancel" || evs[0].Signer.ID != "alice" {
		t.Fatalf("published %+v", evs)
	}
	ev := evs[0].Events[0]
	if ev.Run != runC || !strings.Contains(string(ev.Data), `"reason":"wrong branch"`) {
		t.Errorf("cancel event = %+v data %s", ev, ev.Data)
	}

	// A finished run is not cancelled, and nothing more is published.
	r = h.run("run", "cancel", runB)
	if r.code != ExitError || !strings.Contains(r.stderr, "already finished (succeeded)") {
		t.Errorf("cancel finished run = %+v", r)
	}
	if n := len(h.events()); n != 1 {
		t.Errorf("%d events after refusing a cancel, want 1", n)
	}
}
