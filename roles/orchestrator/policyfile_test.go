package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/roles"
)

const twoApprovers = `name: two
approvals:
  high: {approvers: 2, not_submitter: true}
rules:
  - pattern: "rm -rf"
    level: high
    action: confirm
`

// TestUsePolicyFile: agentd's --policy file becomes the text a leader
// records; a file that cannot be read or is not a policy stops Start with
// an error naming it.
func TestUsePolicyFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(twoApprovers), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("rules:\n  - levle: high\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := New(roles.Env{}, Config{})
	o.UsePolicyFile(good)
	if string(o.bootstrap) != twoApprovers || o.bootstrapErr != nil {
		t.Fatalf("bootstrap %q, err %v", o.bootstrap, o.bootstrapErr)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing.yaml")} {
		o := New(roles.Env{}, Config{})
		o.UsePolicyFile(path)
		err := o.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Start = %v, want an error naming the file", path, err)
		}
	}
}

// TestNewLoadIsEmpty: a new orchestrator holds no step on any node.
func TestNewLoadIsEmpty(t *testing.T) {
	o := New(roles.Env{Node: "o1"}, Config{})
	if got := o.Load(); len(got) != 0 {
		t.Fatalf("a new orchestrator's Load = %v", got)
	}
}
