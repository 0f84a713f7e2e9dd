package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// debugOutcome is what examples/debug.yaml ends with: each step's status
// and code, and the verdict on each hypothesis.
var (
	debugSteps = map[string]string{
		"shell": "succeeded", "reproduce": "failed exit_nonzero", "diagnose": "succeeded", "fix": "succeeded",
		"locale": "skipped branch_not_taken", "done": "skipped branch_not_taken", "report": "succeeded",
	}
	debugVerdicts = map[string]string{"empty-name": "supported", "no-shell": "refuted", "locale": "untested"}
)

// TestDebugPlaybook submits examples/debug.yaml to a real node and checks
// it end to end: the branches taken and not taken (skip reason
// branch_not_taken), a failure a branch routes that does not fail the
// run, the evidence and verdicts plan show gives in text, JSON and
// Mermaid, and -o yaml exported and submitted again as a plan file,
// which runs the same.
func TestDebugPlaybook(t *testing.T) {
	h, _ := nodeHarness(t)
	file := filepath.Join("..", "..", "..", "..", "examples", "debug.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plan.Parse("debug.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	run := submitDebug(t, h, file)

	r := h.run("run", "show", run)
	for _, s := range []string{"done (attempt 0): branch not taken: reproduce failed, and this step is its success branch",
		"locale (attempt 0): branch not taken: diagnose succeeded, and this step is its failure branch"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("run show lacks %q:\n%s", s, r.stdout)
		}
	}

	r = h.run("plan", "show", run)
	for _, s := range []string{"-          → on success: done  → on failure: diagnose\n",
		"\nhypotheses\n", "empty-name  supported  the input gives an empty name", "    diagnose  succeeded  supports\n", "    fix       succeeded  supports\n",
		"no-shell    refuted    the box cannot run /bin/sh scripts", "    shell     succeeded  refutes\n", "locale      untested", "    locale    skipped    none\n", "  report     shell  echo debugging done                        fix,locale,done\n"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("plan show lacks %q:\n%s", s, r.stdout)
		}
	}

	r = h.run("plan", "show", run, "-o", "json")
	var rev planRevision
	if err := json.Unmarshal([]byte(r.stdout), &rev); err != nil {
		t.Fatalf("plan show -o json = %+v (%v)", r, err)
	}
	if !reflect.DeepEqual(rev.Plan, *want) {
		t.Errorf("plan show -o json plan:\n%+v\nwant\n%+v", rev.Plan, *want)
	}
	got := map[string]string{}
	for _, hv := range rev.Hypotheses {
		got[hv.ID] = hv.Verdict
	}
	if !reflect.DeepEqual(got, debugVerdicts) {
		t.Errorf("verdicts %v, want %v", got, debugVerdicts)
	}
	if e := rev.Hypotheses[0].Evidence; len(e) != 2 || e[0] != (orchestrator.HypothesisEvidence{Step: "diagnose", Status: "succeeded", Evidence: event.EvidenceSupports}) {
		t.Errorf("empty-name evidence %+v", e)
	}

	// The run replays without divergence: the skips follow from the
	// outcomes the ledger holds.
	r = h.run("run", "replay", run, "-o", "json", "--timeout", "20s")
	var rep replay.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Diverged() || rep.Finished != event.RunSucceeded {
		t.Fatalf("run replay = %+v (%v)", r, err)
	}

	r = h.run("plan", "show", run, "-o", "mermaid")
	for _, s := range []string{"-->|failure|", "-->|success|"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("mermaid lacks %q:\n%s", s, r.stdout)
		}
	}

	// -o yaml is a plan file: the same plan, and it runs the same.
	r = h.run("plan", "show", run, "-o", "yaml")
	again, err := plan.Parse("again.yaml", []byte(r.stdout))
	if err != nil {
		t.Fatalf("plan show -o yaml does not parse: %v\n%s", err, r.stdout)
	}
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v\nyaml:\n%s", again, want, r.stdout)
	}
	exported := filepath.Join(t.TempDir(), "exported.yaml")
	if err := os.WriteFile(exported, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	submitDebug(t, h, exported)
}

// submitDebug submits the debug playbook from file, waits for the run to
// succeed and checks its steps' statuses, codes and evidence; it returns
// the run id.
func submitDebug(t *testing.T, h *harness, file string) string {
	t.Helper()
	r := h.run("goal", "submit", "-f", file, "--wait", "--timeout", "60s", "-o", "json")
	var v api.Run
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.ID == "" {
		t.Fatalf("submit = %+v (%v)", r, err)
	}
	r = h.run("run", "show", v.ID, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("run show = %+v (%v)", r, err)
	}
	if v.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)\n%s", v.ID, v.Status, v.Reason, r.stdout)
	}
	got := map[string]string{}
	for _, s := range v.Steps {
		got[s.ID] = strings.TrimSpace(s.Status + " " + s.Code)
		if s.ID == "diagnose" && !reflect.DeepEqual(s.Evidence, []orchestrator.StepEvidence{{Hypothesis: "empty-name", Evidence: event.EvidenceSupports}}) {
			t.Errorf("diagnose evidence %+v", s.Evidence)
		}
	}
	if !reflect.DeepEqual(got, debugSteps) {
		t.Errorf("steps %v, want %v", got, debugSteps)
	}
	return v.ID
}

// TestPlanYAMLBranches: the plan-file form of next, tests (short when the
// evidence is the default, long otherwise) and hypotheses parses back to
// the same plan.
func TestPlanYAMLBranches(t *testing.T) {
	p, err := plan.Parse("debug.yaml", []byte(`
hypotheses: [{id: h, statement: "it: is"}, {id: k, statement: other}]
steps:
  - {id: a, run: "false", next: [{on: failure, to: b}, {on: success, to: c}], tests: [h, {hypothesis: k, success: none}]}
  - {id: b, run: echo b, tests: [{hypothesis: h, failure: supports}]}
  - {id: c, kind: noop}
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := planYAML(*p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`next: [{"on": failure, to: b}, {"on": success, to: c}]`, "tests: [h, {hypothesis: k, success: none}]", "hypotheses:\n  - id: h\n"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("yaml lacks %q:\n%s", s, b)
		}
	}
	again, err := plan.Parse("again.yaml", b)
	if err != nil || !reflect.DeepEqual(again, p) {
		t.Fatalf("round trip: %v\n%+v\nwant\n%+v\n%s", err, again, p, b)
	}
}
