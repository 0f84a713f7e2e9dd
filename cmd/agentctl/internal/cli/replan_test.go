package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// replanModel speaks the chat-completions API: it answers a first
// planning request with first and a replan request (its prompt carries
// the failure) with revised; prompts records every request's messages.
type replanModel struct {
	first, revised string
	mu             sync.Mutex
	prompts        []string
}

func (m *replanModel) serve(t *testing.T) *httptest.Server {
	t.Helper()
	return llmtest.Server(t, func(prompt string) string {
		m.mu.Lock()
		m.prompts = append(m.prompts, prompt)
		m.mu.Unlock()
		if strings.Contains(prompt, "a step failed") {
			return m.revised
		}
		return m.first
	})
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReplanFixesAFailedStep: a model plans a step that fails; the leader
// asks for a replan with the failure; the model's revision 2 fixes the
// step; the run succeeds without running the step already done again, and
// plan diff shows the change and the rationale.
func TestReplanFixesAFailedStep(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // steps may run as another user
		t.Fatal(err)
	}
	prepLog, marker := filepath.Join(dir, "prep.log"), filepath.Join(dir, "marker")
	prep := map[string]any{"id": "prep", "run": "echo ran >> " + prepLog}
	m := &replanModel{
		first: "```json\n" + mustJSON(t, map[string]any{"steps": []any{prep,
			map[string]any{"id": "check", "run": "test -f " + marker, "depends_on": []string{"prep"}}}}) + "\n```",
		revised: mustJSON(t, map[string]any{"rationale": "the marker did not exist: create it before testing for it", "steps": []any{prep,
			map[string]any{"id": "check", "run": "touch " + marker + " && test -f " + marker, "depends_on": []string{"prep"}},
			map[string]any{"id": "report", "run": "echo checked", "depends_on": []string{"check"}}}}),
	}
	srv := m.serve(t)
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}

	run := event.NewID()
	text := "check the marker"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: text, Text: text})); err != nil {
		t.Fatal(err)
	}
	r := n.WaitRun(t, run, 60*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	if b, err := os.ReadFile(prepLog); err != nil || string(b) != "ran\n" {
		t.Fatalf("prep.log = %q, %v: the step done before the replan ran again", b, err)
	}
	m.mu.Lock()
	prompts := append([]string(nil), m.prompts...)
	m.mu.Unlock()
	if len(prompts) != 2 || !strings.Contains(prompts[1], "Failed step: check (attempt 1)") ||
		!strings.Contains(prompts[1], "Command: test -f "+marker) || !strings.Contains(prompts[1], "Exit code: 1") ||
		!strings.Contains(prompts[1], "Steps done (they will not run again if the revised plan keeps them unchanged): prep") {
		t.Fatalf("%d prompts; the replan prompt:\n%s", len(prompts), prompts[len(prompts)-1])
	}

	// The ledger: one assignment of prep; revision 2 replaces 1 and
	// carries the rationale and the failure.
	var prepAssigned int
	var rev2 *event.PlanProposedData
	var req *event.PlanReplanRequestedData
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		switch event.Type(l.Type) {
		case event.TaskAssigned:
			var d event.TaskAssignedData
			if json.Unmarshal(l.Data, &d) == nil && d.Step.ID == "prep" {
				prepAssigned++
			}
		case event.PlanProposed:
			var d event.PlanProposedData
			if err := json.Unmarshal(l.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.Revision == 2 {
				rev2 = &d
			}
		case event.PlanReplanRequested:
			req = new(event.PlanReplanRequestedData)
			if err := json.Unmarshal(l.Data, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	if req == nil || req.Revision != 1 || req.Replans != 1 || req.Tokens != 360 || len(req.Done) != 1 || req.Failure.ExitCode != 1 || req.Failure.Class != event.ClassLogic {
		t.Errorf("replan request = %+v", req)
	}
	if prepAssigned != 1 {
		t.Errorf("prep assigned %d times, want 1", prepAssigned)
	}
	if rev2 == nil || rev2.Replaces != 1 || rev2.Failure == nil || rev2.Failure.Step != "check" || rev2.Planner == nil ||
		!strings.Contains(rev2.Rationale, "marker did not exist") || rev2.Plan.Steps[0].OnFailure != event.OnFailureReplan {
		t.Fatalf("revision 2 = %+v", rev2)
	}

	// Replay refolds the run, replan included, and decides the same.
	res := h.run("run", "replay", run, "-o", "json", "--timeout", "20s")
	var rep replay.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 || rep.Diverged() || rep.Finished != event.RunSucceeded {
		t.Fatalf("run replay = %+v (%v)", res, err)
	}

	res = h.run("plan", "show", run)
	if res.code != 0 || !strings.Contains(res.stdout, "plan revision 2 of 2 (accepted, from llm)") || !strings.Contains(res.stdout, "rationale: the marker did not exist") {
		t.Errorf("plan show = %+v", res)
	}

	res = h.run("plan", "diff", run, "1", "2")
	for _, s := range []string{"1 added, 0 removed, 1 changed, 1 unchanged", "rationale: the marker did not exist", "+ report", "~ check", "touch " + marker} {
		if res.code != 0 || !strings.Contains(res.stdout, s) {
			t.Errorf("plan diff lacks %q: %+v", s, res)
		}
	}
}

// TestPlanFileStepAskingForReplanFailsTheRun: a plan file's step with
// on_failure replan fails its run with the planner's clear refusal.
func TestPlanFileStepAskingForReplanFailsTheRun(t *testing.T) {
	h, n := nodeHarness(t)
	r := n.WaitRun(t, n.Submit(t, "f.yaml", "steps:\n  - id: a\n    run: \"false\"\n    on_failure: replan\n"), 30*time.Second)
	if r.Status != event.RunFailed || !strings.Contains(r.Reason, "a plan-file goal cannot be replanned") || !strings.Contains(r.Reason, "step a failed") {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	res := h.run("run", "show", r.ID)
	if res.code != 0 || !strings.Contains(res.stdout, "replan rejected: planner: a plan-file goal cannot be replanned") {
		t.Fatalf("run show = %+v", res)
	}
}

// TestReplansExhaustedCompensates: a model that never fixes the failing
// step is replanned until the replans budget (the default 3) is spent;
// the run then fails with replans_exhausted and its file edit is undone.
func TestReplansExhaustedCompensates(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "app.txt")
	if err := os.WriteFile(target, []byte("old\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	answer := mustJSON(t, map[string]any{"rationale": "try again", "steps": []any{
		map[string]any{"id": "edit", "kind": "file.write", "path": target, "content": "new\n"},
		map[string]any{"id": "test", "run": "grep -q fixed " + target, "depends_on": []string{"edit"}}}})
	m := &replanModel{first: answer, revised: answer}
	srv := m.serve(t)
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)

	run := event.NewID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "fix it", Text: "fix it"})); err != nil {
		t.Fatal(err)
	}
	r := n.WaitRun(t, run, 60*time.Second)
	if r.Status != event.RunFailed || !strings.Contains(r.Reason, "the replans budget (3) is spent") {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	var end event.RunFinishedData
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		if event.Type(l.Type) == event.RunFinished {
			if err := json.Unmarshal(l.Data, &end); err != nil {
				t.Fatal(err)
			}
		}
	}
	if end.Code != "replans_exhausted" {
		t.Fatalf("run.finished = %+v", end)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "old\n" {
		t.Fatalf("%s = %q, %v: the edit was not undone", target, b, err)
	}
	m.mu.Lock()
	calls := len(m.prompts)
	m.mu.Unlock()
	if calls != 4 {
		t.Fatalf("%d model calls, want 4 (a plan and 3 replans)", calls)
	}
}
