package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

const showPlan = `goal: ship it
subgoals:
  - id: build
    title: Build the binary
    steps:
      - {id: compile, run: "echo compiling \"app\"", timeout: 30s, retries: 1}
      - {id: vet, run: echo vetted, depends_on: [compile]}
  - id: ship
    depends_on: [build]
    steps:
      - {id: upload, run: echo uploaded, on_failure: continue, env: {TARGET: staging}}
steps:
  - {id: announce, kind: noop, depends_on: [ship]}
`

func TestPlanShowFormatsAndReplay(t *testing.T) {
	h, _ := nodeHarness(t)
	planFile := filepath.Join(t.TempDir(), "ship.yaml")
	if err := os.WriteFile(planFile, []byte(showPlan), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.run("goal", "submit", "-f", planFile, "--wait", "--timeout", "30s", "-o", "json")
	if r.code != 0 {
		t.Fatalf("submit = %+v", r)
	}
	var sub struct {
		Run string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sub); err != nil || sub.Run == "" {
		t.Fatalf("submit output %q: %v", r.stdout, err)
	}
	want, err := plan.Parse("ship.yaml", []byte(showPlan))
	if err != nil {
		t.Fatal(err)
	}

	// -o yaml is a plan file that parses to the same plan.
	r = h.run("plan", "show", sub.Run[:8], "-o", "yaml")
	if r.code != 0 {
		t.Fatalf("plan show -o yaml = %+v", r)
	}
	again, err := plan.Parse("again.yaml", []byte(r.stdout))
	if err != nil {
		t.Fatalf("plan show -o yaml does not parse: %v\n%s", err, r.stdout)
	}
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v\nyaml:\n%s", again, want, r.stdout)
	}

	r = h.run("plan", "show", sub.Run, "-o", "json")
	var rev planRevision
	if err := json.Unmarshal([]byte(r.stdout), &rev); err != nil || rev.Revision != 1 || !rev.Accepted || rev.Source != "file" || len(rev.Plan.Steps) != 4 {
		t.Fatalf("plan show -o json = %+v (%v)", r, err)
	}

	r = h.run("plan", "show", sub.Run, "-o", "mermaid")
	for _, s := range []string{"flowchart TD", `subgraph g0["build: Build the binary"]`, "s0 --> s1", `compile: echo compiling #quot;app#quot;`} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("mermaid lacks %q:\n%s", s, r.stdout)
		}
	}
	r = h.run("plan", "show", sub.Run)
	if r.code != 0 || !strings.Contains(r.stdout, "plan revision 1 of 1 (accepted, from file)") || !strings.Contains(r.stdout, "build: Build the binary") {
		t.Fatalf("plan show = %+v", r)
	}
	if r = h.run("plan", "show", sub.Run, "--revision", "2"); r.code != 1 || !strings.Contains(r.stderr, "no plan revision 2 (it has 1)") {
		t.Fatalf("missing revision = %+v", r)
	}
	if r = h.run("run", "list", "-o", "yaml"); r.code != 2 || !strings.Contains(r.stderr, "want text, json or jsonl") {
		t.Fatalf("yaml elsewhere = %+v", r)
	}

	// The run replays without divergence.
	r = h.run("run", "replay", sub.Run, "-o", "json", "--timeout", "20s")
	var rep replay.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Diverged() || rep.Checked < 6 || rep.Finished != event.RunSucceeded {
		t.Fatalf("run replay = %+v (%v)", r, err)
	}
}

func TestPlanDiff(t *testing.T) {
	from := event.Plan{Steps: []event.Step{
		{ID: "a", Kind: event.KindShell, Run: "make"},
		{ID: "b", Kind: event.KindShell, Run: "make test", DependsOn: []string{"a"}},
		{ID: "c", Kind: event.KindNoop},
	}}
	to := event.Plan{Steps: []event.Step{
		{ID: "a", Kind: event.KindShell, Run: "make"},
		{ID: "b", Kind: event.KindShell, Run: "go test ./...", DependsOn: []string{"a"}, Retries: 2},
		{ID: "d", Kind: event.KindShell, Run: "make lint"},
	}}
	d := diffPlans(from, to)
	if len(d.Added) != 1 || d.Added[0].ID != "d" || len(d.Removed) != 1 || d.Removed[0].ID != "c" || d.Same != 1 ||
		len(d.Changed) != 1 || !reflect.DeepEqual(d.Changed[0].Fields, []string{"retries", "run"}) {
		t.Fatalf("diff = %+v", d)
	}
	var b strings.Builder
	d.Run, d.From, d.To = "run-1", 1, 2
	renderDiff(&b, d)
	for _, s := range []string{"1 added, 1 removed, 1 changed, 1 unchanged", "+ d  make lint", "- c  -", `run: "make test" → "go test ./..."`, "retries: (none) → 2"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("diff output lacks %q:\n%s", s, b.String())
		}
	}
}
