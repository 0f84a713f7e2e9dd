package plan

import "testing"

// BenchmarkIsNormal: the check every fold of a goal that carries its plan
// makes (the orchestrator's, memory's, the artifacts', the planner's), for
// a one-step plan.
func BenchmarkIsNormal(b *testing.B) {
	p, err := Parse("p.json", []byte(`{"goal": "submit to start", "steps": [{"id": "only", "run": "date +%s%N > /tmp/agentic-bench-1/m-3"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !IsNormal(p) {
			b.Fatal("not normal")
		}
	}
}
