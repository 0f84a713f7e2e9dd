package cli

import (
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
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ID ") {
		t.Fatalf("run list = %+v", r)
	}
	for _, want := range []string{runA, runB, runC, "deploy the app", "2/4", "running"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run list text lacks %q:\n%s", want, r.stdout)
		}
	}

	r = h.run("run", "list", "-o", "json", "--status", "failed")
	runs := decodeJSON[[]api.Run](t, r.stdout)
	if r.code != 0 || len(runs) != 1 || runs[0].ID != runA || !strings.HasPrefix(r.stdout, "[") {
		t.Fatalf("run list -o json = %+v", r)
	}

	r = h.run("run", "list", "-o", "jsonl", "--limit", "2")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("run list -o jsonl = %+v", r)
	}
	if got := decodeJSON[api.Run](t, lines[1]); got.ID != runB {
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
		id       string
		wantErr  string
		wantHint string
	}{
		{"0190aa", `"0190aa" matches 2 runs (` + runB + ", " + runA + ")", "hint: give more characters of the id"},
		{"ffff", `no run matches "ffff"`, "hint: list them with: agentctl run list"},
	}
	for _, tt := range tests {
		r := h.run("run", "show", tt.id)
		if r.code != ExitError || r.stdout != "" {
			t.Errorf("run show %s = %+v, want exit 1", tt.id, r)
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tt.wantErr) || lines[1] != tt.wantHint {
			t.Errorf("run show %s stderr = %q, want error with %q then %q", tt.id, r.stderr, tt.wantErr, tt.wantHint)
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
