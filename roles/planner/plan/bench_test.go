package plan

import "testing"

// BenchmarkParseLarge parses a plan at the step limit: a chain of subgoals
// of 10 parallel steps each.
func BenchmarkParseLarge(b *testing.B) {
	data := []byte(wide(MaxSteps/10, 10))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("big.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
