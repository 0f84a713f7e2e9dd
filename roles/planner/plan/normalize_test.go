package plan

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

func mustParse(t *testing.T, name, input string) *event.Plan {
	t.Helper()
	p, err := Parse(name, []byte(input))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return p
}

func ids(p *event.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.ID)
	}
	return out
}

func TestDefaults(t *testing.T) {
	p := mustParse(t, "p.yaml", `
steps:
  - {id: sh, run: "echo"}
  - {id: join, depends_on: [sh]}
  - {id: retried, run: x, retries: 2}
  - {id: paced, run: x, retries: 2, backoff: 3s, on_failure: continue}
  - {id: secs, run: x, timeout: 90}
  - {id: yamlbool, run: true}
`)
	cases := []struct {
		id        string
		kind      event.StepKind
		onFailure event.OnFailure
		backoff   event.Duration
		timeout   event.Duration
		run       string
	}{
		{"sh", event.KindShell, event.OnFailureAbort, 0, 0, "echo"},
		{"join", event.KindNoop, event.OnFailureAbort, 0, 0, ""},
		{"retried", event.KindShell, event.OnFailureAbort, event.Duration(DefaultBackoff), 0, "x"},
		{"paced", event.KindShell, event.OnFailureContinue, event.Duration(3 * time.Second), 0, "x"},
		{"secs", event.KindShell, event.OnFailureAbort, 0, event.Duration(90 * time.Second), "x"},
		{"yamlbool", event.KindShell, event.OnFailureAbort, 0, 0, "true"},
	}
	for _, c := range cases {
		s := p.Step(c.id)
		if s == nil {
			t.Fatalf("step %q missing", c.id)
		}
		if s.Kind != c.kind || s.OnFailure != c.onFailure || s.Backoff != c.backoff || s.Timeout != c.timeout || s.Run != c.run {
			t.Errorf("step %q = kind %q on_failure %q backoff %v timeout %v run %q; want %q %q %v %v %q",
				c.id, s.Kind, s.OnFailure, s.Backoff, s.Timeout, s.Run, c.kind, c.onFailure, c.backoff, c.timeout, c.run)
		}
	}
}

// TestCapabilities: a step's capabilities, a list or one name, come out
// sorted and each once; none is nil.
func TestCapabilities(t *testing.T) {
	p := mustParse(t, "p.yaml", `
steps:
  - {id: gpu, run: train, capabilities: [gpu, docker, gpu]}
  - {id: one, run: x, capabilities: docker}
  - {id: none, run: x, capabilities: []}
  - {id: absent, run: x}
`)
	for id, want := range map[string][]string{"gpu": {"docker", "gpu"}, "one": {"docker"}, "none": nil, "absent": nil} {
		if got := p.Step(id).Capabilities; !slices.Equal(got, want) || (want == nil) != (got == nil) {
			t.Errorf("step %s capabilities %#v, want %#v", id, got, want)
		}
	}
	b, err := json.Marshal(p.Step("gpu"))
	if err != nil || !strings.Contains(string(b), `"capabilities":["docker","gpu"]`) {
		t.Errorf("wire form %s %v", b, err)
	}
	q := clonePlan(p)
	if err := Normalize(&q); err != nil || !reflect.DeepEqual(q, *p) {
		t.Errorf("normalizing again changed the plan: %v", err)
	}
}

func TestTopologicalOrderIsStable(t *testing.T) {
	p := mustParse(t, "p.yaml", `
steps:
  - {id: c, run: x, depends_on: [b]}
  - {id: a, run: x}
  - {id: b, run: x}
  - {id: d, run: x}
  - {id: e, run: x, depends_on: [a, a, d, a]}
`)
	if got, want := ids(p), []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if got := p.Step("e").DependsOn; !slices.Equal(got, []string{"a", "d"}) {
		t.Errorf("e.depends_on = %v, want deduplicated [a d]", got)
	}
	// Every step comes after all its dependencies.
	seen := map[string]bool{}
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			if !seen[d] {
				t.Errorf("step %s comes before its dependency %s", s.ID, d)
			}
		}
		seen[s.ID] = true
	}
}

func TestSubgoalExpansion(t *testing.T) {
	p := mustParse(t, "p.yaml", `
subgoals:
  - id: A
    steps:
      - {id: a1, run: x}
      - {id: a2, run: x, depends_on: [a1]}
      - {id: a3, run: x, depends_on: [a1]}
  - id: B
    depends_on: [A]
    steps:
      - {id: b1, run: x}
      - {id: b2, run: x, depends_on: [b1]}
      - {id: b3, run: x}
  - id: C
    depends_on: [a1]
    steps:
      - {id: c1, run: x}
steps:
  - {id: top, run: x, depends_on: [B, c1]}
`)
	want := map[string][]string{
		"a1":  nil,
		"a2":  {"a1"},
		"a3":  {"a1"},
		"b1":  {"a2", "a3"}, // entry of B → exits of A
		"b2":  {"b1"},       // not an entry: waits via b1
		"b3":  {"a2", "a3"},
		"c1":  {"a1"},             // subgoal depending on a step
		"top": {"c1", "b2", "b3"}, // direct refs first, then B's exits
	}
	for id, deps := range want {
		s := p.Step(id)
		if s == nil {
			t.Fatalf("step %s missing", id)
		}
		if !slices.Equal(s.DependsOn, deps) {
			t.Errorf("%s.depends_on = %v, want %v", id, s.DependsOn, deps)
		}
	}
	if got := p.Step("b2").Subgoal; got != "B" {
		t.Errorf("b2.subgoal = %q, want B", got)
	}
	if got := p.Subgoals; !reflect.DeepEqual(got, []event.Subgoal{{ID: "A"}, {ID: "B"}, {ID: "C"}}) {
		t.Errorf("subgoals = %+v", got)
	}
}

// TestSubgoalExpansionPreservesOrdering checks the claim behind the
// entry/exit expansion: every step of a dependent subgoal transitively
// depends on every step of the subgoal it depends on.
func TestSubgoalExpansionPreservesOrdering(t *testing.T) {
	p := mustParse(t, "p.yaml", `
subgoals:
  - id: A
    steps:
      - {id: a1, run: x}
      - {id: a2, run: x}
      - {id: a3, run: x, depends_on: [a1]}
      - {id: a4, run: x, depends_on: [a3, a2]}
      - {id: a5, run: x, depends_on: [a1]}
  - id: B
    depends_on: [A]
    steps:
      - {id: b1, run: x}
      - {id: b2, run: x, depends_on: [b1]}
      - {id: b3, run: x, depends_on: [b2]}
      - {id: b4, run: x}
`)
	reach := func(from string) map[string]bool {
		seen := map[string]bool{}
		stack := []string{from}
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, d := range p.Step(id).DependsOn {
				if !seen[d] {
					seen[d] = true
					stack = append(stack, d)
				}
			}
		}
		return seen
	}
	for _, b := range []string{"b1", "b2", "b3", "b4"} {
		r := reach(b)
		for _, a := range []string{"a1", "a2", "a3", "a4", "a5"} {
			if !r[a] {
				t.Errorf("%s does not (transitively) depend on %s", b, a)
			}
		}
	}
}

func TestSeedFormat(t *testing.T) {
	p := mustParse(t, "seed.json", `{"mode": "plan", "steps": [
		{"goal": "one", "commands": ["a", "b"]},
		{"goal": "empty", "commands": "c"},
		{"goal": "three", "commands": ["d"]}]}`)
	if got, want := ids(p), []string{"s1.1", "s1.2", "s2.1", "s3.1"}; !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i, s := range p.Steps {
		if s.Kind != event.KindShell {
			t.Errorf("%s kind %q", s.ID, s.Kind)
		}
		if i > 0 && !slices.Equal(s.DependsOn, []string{p.Steps[i-1].ID}) {
			t.Errorf("%s depends on %v, want [%s]", s.ID, s.DependsOn, p.Steps[i-1].ID)
		}
	}
	if p.Goal != "one; empty; three" || p.Subgoals[1].Title != "empty" || p.Step("s2.1").Subgoal != "s2" {
		t.Errorf("goal %q subgoals %+v", p.Goal, p.Subgoals)
	}
	// Detected without "mode" by the shape of its steps; a top-level goal wins.
	p = mustParse(t, "seed.yaml", "goal: mine\nsteps:\n  - goal: g\n    commands: [x]\n")
	if p.Goal != "mine" || len(p.Steps) != 1 || p.Steps[0].ID != "s1.1" {
		t.Errorf("seed without mode: %+v", p)
	}
}

func TestJSONAndYAMLAgree(t *testing.T) {
	y := mustParse(t, "p.yaml", "goal: g\nsteps:\n  - id: a\n    run: x\n    timeout: 1m\n  - id: b\n    depends_on: [a]\n")
	j := mustParse(t, "p.json", `{"goal": "g", "steps": [{"id": "a", "run": "x", "timeout": "1m"}, {"id": "b", "depends_on": ["a"]}]}`)
	sniffed := mustParse(t, "plan", `{"goal": "g", "steps": [{"id": "a", "run": "x", "timeout": "1m"}, {"id": "b", "depends_on": ["a"]}]}`)
	flow := mustParse(t, "plan", `{goal: g, steps: [{id: a, run: x, timeout: 1m}, {id: b, depends_on: [a]}]}`)
	for _, p := range []*event.Plan{j, sniffed, flow} {
		if !reflect.DeepEqual(y, p) {
			t.Errorf("plans differ:\n%+v\n%+v", y, p)
		}
	}
	bom := mustParse(t, "p.json", "\xef\xbb\xbf"+`{"steps": [{"id": "a"}]}`)
	if len(bom.Steps) != 1 {
		t.Errorf("BOM: %+v", bom)
	}
}

func TestNormalizeIdempotentAndJSONRoundTrip(t *testing.T) {
	p := mustParse(t, "p.yaml", `
subgoals:
  - id: A
    steps: [{id: a1, run: x, retries: 1, env: {K: v}}, {id: a2, depends_on: a1}]
  - id: B
    depends_on: [A]
    steps: [{id: b1, run: x}]
`)
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back event.Plan
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if err := Validate(&back); err != nil {
		t.Fatalf("round-tripped plan invalid: %v", err)
	}
	if !reflect.DeepEqual(p, &back) {
		t.Errorf("JSON round trip changed the plan:\n%+v\n%+v", p, &back)
	}
	again := back
	if err := Normalize(&again); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, &again) {
		t.Errorf("Normalize changed a normalized plan:\n%+v\n%+v", p, &again)
	}
}
