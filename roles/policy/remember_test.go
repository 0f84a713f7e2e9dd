package policy

import (
	"errors"
	"strings"
	"testing"
)

// TestRemember: the remembered rule allows exactly the approved command,
// keeps the policy's comments, and changes nothing else; what no narrow
// rule can name is refused.
func TestRemember(t *testing.T) {
	base := DefaultYAML()
	for _, tc := range []struct {
		cmd  string
		near []string // still not allowed
	}{
		{"rm -rf ./build", []string{"rm -rf ./build /", "rm -rf ./build2", "rm -rfv ./build", "rm -rf ./build $X", "sudo rm -rf ./build"}},
		{"git push --force origin main", []string{"git push --force origin dev", "git push --force origin main other"}},
		{"shutdown -h now", []string{"shutdown -r now", "shutdown -h +5", "sudo shutdown -h now"}},
		// Gated by their effect (a recursive delete), allowed exactly.
		{"find ./build -delete", []string{"find ./build2 -delete", "find ./build / -delete", "find ./build -delete -print"}},
		{"rm -r ./build", []string{"rm -r ./build /", "rm -r ./other"}},
		{"rsync -a --delete ./a/ ./b/", []string{"rsync -a --delete ./a/ ./c/", "rsync -a --delete-excluded ./a/ ./b/"}},
	} {
		text, err := Remember(base, tc.cmd, "", "remembered-1", "approved by bob")
		if err != nil {
			t.Fatalf("%q: %v", tc.cmd, err)
		}
		p, err := Parse(text, "remembered")
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.cmd, err, text)
		}
		if v := p.Judge(tc.cmd); v.Action != Allow {
			t.Errorf("%q: %s by %s after remembering", tc.cmd, v.Action, v.Rule)
		}
		for _, n := range tc.near {
			if v := p.Judge(n); v.Action == Allow {
				t.Errorf("remembering %q allows %q", tc.cmd, n)
			}
		}
		if !strings.Contains(string(text), "# The policy agentic ships with.") || len(p.Rules) != len(Default().Rules)+1 {
			t.Errorf("%q: comments or rules lost:\n%s", tc.cmd, text)
		}
	}
	for _, cmd := range []string{"rm -rf build && ls", "rm -rf *.o", "rm -rf $DIR", "X=1 rm -rf b", "rm -rf b > log", "sudo systemctl restart nginx",
		"$(echo rm) -rf /", "tar -xf a.tar", "rm -rf /etc/x"} {
		if _, err := Remember(base, cmd, "", "r", ""); !errors.Is(err, ErrNotRememberable) {
			t.Errorf("%q: err %v, want ErrNotRememberable", cmd, err)
		}
	}
	if out, err := Remember([]byte("default: confirm\n"), "ls -l /tmp", "", "r", ""); err != nil || !strings.Contains(string(out), "pattern: ls -l /tmp") {
		t.Errorf("a policy without rules: %v\n%s", err, out)
	}
}
