package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestNoResponders(t *testing.T) {
	h := newHarness(t) // a NATS server, no node
	r := h.run("run", "list")
	want := "error: no agentd node answers agentic.api.runs.list on " + h.url + ": is agentd running? (start one with: agentd --data ./data)\n"
	if r.code != ExitError || r.stderr != want {
		t.Fatalf("run list without a node = %d %q\nwant %q", r.code, r.stderr, want)
	}
}

func TestCannotConnect(t *testing.T) {
	var stderr bytes.Buffer
	code := Run(context.Background(), []string{"--server", "nats://127.0.0.1:1", "--timeout", "1s", "run", "list"},
		Env{Stdout: new(bytes.Buffer), Stderr: &stderr, Getenv: func(string) string { return "" }})
	if code != ExitError || !strings.Contains(stderr.String(), "error: cannot reach NATS at nats://127.0.0.1:1") ||
		!strings.Contains(stderr.String(), "hint: is agentd running?") {
		t.Fatalf("unreachable server = %d %q", code, stderr.String())
	}
}

func TestUsageErrors(t *testing.T) {
	h := newHarness(t).withNode()
	for _, args := range [][]string{
		{"bogus"},
		{"run", "bogus"},
		{"run", "show"},
		{"run", "show", "a", "b"},
		{"run", "list", "--nope"},
		{"run", "list", "--status", "weird"},
		{"run", "list", "-o", "yaml"},
		{"run", "list", "--limit", "x"},
		{"goal", "submit"},
		{"goal", "submit", "-f", "x.yaml", "some", "text"},
		{"memory", "put", "shared", "k"},
		{"audit", "tail", "extra"},
		{"--timeout", "0s", "version"},
	} {
		r := h.run(args...)
		if r.code != ExitUsage || !strings.HasPrefix(r.stderr, "error: ") {
			t.Errorf("agentctl %v = %d %q, want usage error (2)", args, r.code, r.stderr)
		}
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("usage errors published %d events", n)
	}
	if r := h.run("run", "list", "--nope"); !strings.HasSuffix(r.stderr, "run 'agentctl run list --help' for usage\n") {
		t.Errorf("usage error does not point at the command's help: %q", r.stderr)
	}
}

func TestGroupWithoutSubcommandShowsHelp(t *testing.T) {
	h := newHarness(t)
	r := h.run("run")
	if r.code != 0 || !strings.Contains(r.stdout, "Available Commands") {
		t.Errorf("agentctl run = %+v", r)
	}
}

func TestMissingCreds(t *testing.T) {
	h := newHarness(t).withNode()
	h.creds = filepath.Join(t.TempDir(), "none.creds")
	r := h.run("goal", "submit", "do something")
	if r.code != ExitError || !strings.Contains(r.stderr, "operator credentials") || !strings.Contains(r.stderr, "hint: agentd writes operator.creds") {
		t.Fatalf("submit without creds = %+v", r)
	}
	if n := len(h.events()); n != 0 {
		t.Errorf("%d events published without creds", n)
	}
}

func TestCredsSearchOrder(t *testing.T) {
	env := map[string]string{}
	a := newApp(Env{Getenv: func(k string) string { return env[k] }})
	env["HOME"] = "/home/u"
	if got := a.credsPath(); got != "/home/u/.agentic/operator.creds" {
		t.Errorf("default creds = %q", got)
	}
	env["AGENTIC_CREDS"] = "/etc/op.creds"
	if got := a.credsPath(); got != "/etc/op.creds" {
		t.Errorf("creds from env = %q", got)
	}
	a.creds = "/flag.creds"
	if got := a.credsPath(); got != "/flag.creds" {
		t.Errorf("creds from flag = %q", got)
	}
}

func TestServerFromEnv(t *testing.T) {
	h := newHarness(t).withNode()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"version"}, Env{Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string {
			if k == "NATS_URL" {
				return h.url
			}
			return ""
		}})
	if code != 0 || !strings.Contains(stdout.String(), "node     node-a v1.2.3") {
		t.Fatalf("NATS_URL not used: %d %q %q", code, stdout.String(), stderr.String())
	}
}
