package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/roles/policy"
)

// runOffline runs agentctl with a server address nothing listens on:
// policy check must not need a cluster.
func runOffline(args ...string) result {
	var stdout, stderr bytes.Buffer
	full := append([]string{"--server", "nats://127.0.0.1:1", "--timeout", "1s"}, args...)
	code := Run(context.Background(), full, Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" }, Version: "v9.9.9-test",
	})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestPolicyCheckText(t *testing.T) {
	r := runOffline("policy", "check", "sudo rm -rf /var/www")
	if r.code != 0 {
		t.Fatalf("policy check = %+v", r)
	}
	for _, want := range []string{
		"command     sudo rm -rf /var/www\n            ^^^^    ^^^ ^^^^^^^^\n",
		"verdict     confirm (level high)\n",
		"rule        recursive-force-delete\n",
		"why         rm -rf /var/www (inside sudo): rule \"recursive-force-delete\" matches -rf (-r -f)",
		"approvals   1\n",
		"policy      default version 0 " + policy.Default().Hash(),
		"  -rf       -r -f  recursive-force-delete",
		"  sudo      -      privilege",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runOffline("policy", "check", "ls -la")
	if r.code != 0 || !strings.Contains(r.stdout, "verdict     allow (level low)") || strings.Contains(r.stdout, "^") {
		t.Errorf("policy check ls = %+v", r)
	}
}

func TestPolicyCheckJSON(t *testing.T) {
	r := runOffline("policy", "check", "-o", "json", "echo cm0gLXJmIC8= | base64 -d | sh")
	if r.code != 0 {
		t.Fatalf("policy check -o json = %+v", r)
	}
	v := decodeJSON[policy.Verdict](t, r.stdout)
	if v.Action != policy.Confirm || v.Rule != policy.RuleUnresolved || !v.Unresolved || !strings.Contains(v.Why, "base64 -d") ||
		v.Policy.Hash != policy.Default().Hash() || len(v.Highlights) == 0 {
		t.Errorf("verdict = %+v", v)
	}
	for _, key := range []string{`"action": "confirm"`, `"level": "high"`, `"rule": "unresolved"`, `"highlights": [`, `"findings": [`} {
		if !strings.Contains(r.stdout, key) {
			t.Errorf("JSON lacks %s:\n%s", key, r.stdout)
		}
	}
}

func TestPolicyCheckFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.yaml")
	compact := `rules: [{pattern: "rm -rf", level: high, require_confirmation: true}, {pattern: "apt-get", level: medium, allowed_flags: ["-y"]}]` + "\n"
	if err := os.WriteFile(good, []byte(compact), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runOffline("policy", "check", "--file", good, "apt-get install --purge nginx")
	if r.code != 0 || !strings.Contains(r.stdout, "verdict     confirm (level high)") || !strings.Contains(r.stdout, "rule        apt-get") ||
		!strings.Contains(r.stdout, "--purge not in allowed_flags") {
		t.Errorf("policy check --file = %+v", r)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n  - pattern: rm\n    levle: high\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runOffline("policy", "check", "-f", bad, "ls")
	if r.code != ExitError || !strings.Contains(r.stderr, "bad.yaml:3:5: rules[0].levle: unknown key") || r.stdout != "" {
		t.Errorf("invalid policy file = %+v", r)
	}
	r = runOffline("policy", "check", "-f", filepath.Join(dir, "missing.yaml"), "ls")
	if r.code != ExitError || !strings.Contains(r.stderr, "read policy") {
		t.Errorf("missing policy file = %+v", r)
	}
}

func TestPolicyCheckUsage(t *testing.T) {
	if r := runOffline("policy", "check"); r.code != ExitUsage {
		t.Errorf("no command: %+v", r)
	}
	if r := runOffline("policy", "check", "a", "b"); r.code != ExitUsage {
		t.Errorf("two commands: %+v", r)
	}
}
