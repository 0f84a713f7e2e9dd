package policy

import (
	"strings"
	"testing"
)

// TestLargeInputsStayJudged: inputs built to blow up a parser or a judge
// (deep nesting, huge brace expansions, thousands of commands or flags)
// get a verdict, and what cannot be judged in full is not allowed.
func TestLargeInputsStayJudged(t *testing.T) {
	nested := "rm -rf /"
	for i := 0; i < 8; i++ {
		nested = "sh -c '" + strings.ReplaceAll(nested, "'", `'\''`) + "'"
	}
	for _, c := range []struct {
		name, cmd string
		allow     bool
		why       string
	}{
		{"deep substitutions", strings.Repeat("$(", 500) + "x" + strings.Repeat(")", 500), false, "known only at run time"},
		{"deep sh -c", nested, false, "-rf"},
		{"deeper sh -c than judged", strings.Repeat("eval ", 3000) + "ls", false, "nested more than"},
		{"brace product", "echo " + strings.Repeat("{a,b}", 200), false, "too large to judge"},
		{"brace range", "echo {1..100000}", false, "too large to judge"},
		{"long pipeline", strings.Repeat("ls | ", 5000) + "ls", false, "more than 4096 commands"},
		{"many flags", "rm " + strings.Repeat("-rf ", 20000), false, "recursive-force-delete"},
		{"many words", "echo " + strings.Repeat("a ", 60000), true, ""},
		{"too long", "echo " + strings.Repeat("a", 300<<10), false, "more than the"},
	} {
		v := Default().Judge(c.cmd)
		if (v.Action == Allow) != c.allow || !strings.Contains(v.Why, c.why) {
			t.Errorf("%s: %s: %.200s", c.name, v.Action, v.Why)
		}
	}
}
