package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

// TestExamples parses every plan file in examples/ and requires success.
func TestExamples(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "examples")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(e.Name(), data)
			if err != nil {
				t.Fatalf("example does not parse:\n%v", err)
			}
			if err := Validate(p); err != nil {
				t.Fatalf("parsed example does not validate:\n%v", err)
			}
		})
	}
	for _, name := range []string{"hello.yaml", "nginx.yaml", "seed.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("example %s: %v", name, err)
		}
	}
	if n < 3 {
		t.Errorf("found %d example plans", n)
	}
}

// TestHelloExample pins what the demo relies on: two subgoals, a
// dependency between them, parallel steps, a creates guard and a noop.
func TestHelloExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "hello.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("hello.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Subgoals) < 2 {
		t.Errorf("subgoals: %+v", p.Subgoals)
	}
	var creates, noop, parallel bool
	byDeps := map[string]int{}
	for _, s := range p.Steps {
		creates = creates || s.Creates != ""
		noop = noop || s.Kind == event.KindNoop
		key := strings.Join(s.DependsOn, ",")
		if byDeps[key]++; byDeps[key] > 1 && key != "" {
			parallel = true
		}
		checkDemoCommand(t, s)
	}
	if !creates || !noop || !parallel {
		t.Errorf("hello.yaml: creates guard %v, noop step %v, parallel steps %v; want all", creates, noop, parallel)
	}
}

// checkDemoCommand requires a demo step to run only harmless programs and
// to name no path outside the demo's scratch directory.
func checkDemoCommand(t *testing.T, s event.Step) {
	t.Helper()
	const scratch = "/tmp/agentic-hello"
	allowed := []string{"echo", "sleep", "uname", "date", "mkdir", "cat"}
	for _, line := range strings.Split(strings.TrimSpace(s.Run), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !slices.Contains(allowed, fields[0]) {
			t.Errorf("step %s runs %q; demo steps run only %v", s.ID, fields[0], allowed)
		}
		for _, f := range fields {
			if strings.HasPrefix(f, "/") && !strings.HasPrefix(f, scratch) {
				t.Errorf("step %s names %s, outside %s", s.ID, f, scratch)
			}
		}
	}
	if s.Creates != "" && !strings.HasPrefix(s.Creates, scratch+"/") {
		t.Errorf("step %s creates %s, outside %s", s.ID, s.Creates, scratch)
	}
}
