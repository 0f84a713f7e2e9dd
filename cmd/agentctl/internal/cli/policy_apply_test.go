package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/policy"
)

// runIn executes agentctl with stdin as its standard input.
func (h *harness) runIn(stdin string, args ...string) result {
	h.t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{"--server", h.url, "--creds", h.creds, "--timeout", "20s"}, args...)
	code := Run(context.Background(), full, Env{
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" }, Version: "v9.9.9-test",
	})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// policyInForce is the version the node's ledger holds in force (0: none).
func policyInForce(t *testing.T, n *nodetest.Node) int64 {
	t.Helper()
	var v api.PolicyVersion
	err := n.API.Call(context.Background(), api.MethodPolicyShow, api.PolicyRequest{}, &v)
	if errors.Is(err, api.ErrNotFound) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return v.Version
}

// policyEvents counts the policy.applied records of the node's ledger.
func policyEvents(t *testing.T, n *nodetest.Node) int {
	t.Helper()
	count := 0
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.PolicyApplied) {
			count++
		}
	}
	return count
}

const strictPolicy = `# gate everything but reading
name: strict
default: confirm
rules:
  - pattern: "ls"
    action: allow
`

// TestPolicyApplyShowHistory: apply records a new version on the one in
// force and prints it; show prints the text as applied, which apply
// takes back unchanged (nothing applied); a change through stdin is the
// next version; history lists them newest first.
func TestPolicyApplyShowHistory(t *testing.T) {
	h, n := nodeHarness(t)
	base := policyInForce(t, n)
	if base == 0 {
		r := h.run("policy", "show")
		if r.code != ExitError || !strings.Contains(r.stderr, "the ledger holds no policy") ||
			!strings.Contains(r.stderr, "hint: agentd records the default policy when its leader starts; or agentctl policy apply") {
			t.Fatalf("show without a policy = %+v", r)
		}
	}
	file := filepath.Join(t.TempDir(), "strict.yaml")
	if err := os.WriteFile(file, []byte(strictPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	strict, err := policy.Parse([]byte(strictPolicy), "strict")
	if err != nil {
		t.Fatal(err)
	}
	r := h.runIn("", "policy", "apply", "-f", file, "--reason", "lock down")
	want := fmt.Sprintf("policy version %d in force: %s (name strict, applied by", base+1, strict.Hash())
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("apply = %+v, want %q", r, want)
	}

	r = h.run("policy", "show")
	if r.code != 0 || r.stdout != strictPolicy {
		t.Fatalf("show = %+v, want the text as applied", r)
	}
	if r := h.run("policy", "show", "-o", "yaml"); r.code != 0 || r.stdout != strictPolicy {
		t.Fatalf("show -o yaml = %+v", r)
	}
	// show | apply -f -: the same policy, nothing applied.
	r = h.runIn(r.stdout, "policy", "apply", "-f", "-")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("policy version %d in force already is this policy (%s): nothing applied", base+1, strict.Hash())) {
		t.Fatalf("show | apply = %+v", r)
	}
	// Formatting and comments do not change the hash either.
	r = h.runIn(strings.ReplaceAll(strictPolicy, "# gate everything but reading\n", "")+"\n\n", "policy", "apply", "-f", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "nothing applied") {
		t.Fatalf("apply of a reformatted copy = %+v", r)
	}
	// A change through stdin is the next version.
	looser := strings.Replace(strictPolicy, "default: confirm", "default: allow", 1)
	r = h.runIn(looser, "policy", "apply", "-f", "-", "-o", "json")
	res := decodeJSON[applyResult](t, r.stdout)
	if r.code != 0 || res.Version != base+2 || res.Base != base+1 || !res.InForce || res.Event == "" || res.Name != "strict" {
		t.Fatalf("apply -f - -o json = %+v (%+v)", r, res)
	}
	if r := h.run("policy", "show"); r.stdout != looser {
		t.Fatalf("show after the second apply = %+v", r)
	}
	if r := h.run("policy", "show", "--version", fmt.Sprint(base+1)); r.code != 0 || r.stdout != strictPolicy {
		t.Fatalf("show --version %d = %+v", base+1, r)
	}
	r = h.run("policy", "show", "-o", "json")
	v := decodeJSON[api.PolicyVersion](t, r.stdout)
	if v.Version != base+2 || v.Text != looser || v.Source != event.PolicyFromApply || v.Signer == "" || v.Seq == 0 {
		t.Fatalf("show -o json = %+v", v)
	}
	if r := h.run("policy", "show", "--version", "99"); r.code != ExitError || !strings.Contains(r.stderr, fmt.Sprintf("the ledger holds versions 1 to %d", base+2)) {
		t.Fatalf("show --version 99 = %+v", r)
	}

	r = h.run("policy", "history")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != int(base)+3 || !strings.HasPrefix(lines[0], "VERSION") || !strings.HasPrefix(lines[1], fmt.Sprint(base+2)) ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), fmt.Sprintf("%d %s strict apply %s", base+1, truncate(strict.Hash(), 19), n.Operator.ID)) ||
		!strings.HasSuffix(lines[2], "lock down") {
		t.Fatalf("history = %+v", r)
	}
	r = h.run("policy", "history", "-o", "json")
	hist := decodeJSON[[]api.PolicyVersion](t, r.stdout)
	if len(hist) != int(base)+2 || hist[0].Version != base+2 || hist[0].Text != "" || hist[1].Reason != "lock down" {
		t.Fatalf("history -o json = %+v", hist)
	}
}

// TestPolicyApplyRefused: an invalid file is reported with its lines and
// credentials without role admin are refused, both before anything is
// published; -f is required.
func TestPolicyApplyRefused(t *testing.T) {
	h, n := nodeHarness(t)
	before := policyEvents(t, n)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n  - pattern: \"rm -rf\"\n    levle: high\n  - pattern: ls\n    action: maybe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.run("policy", "apply", "-f", bad)
	if r.code != ExitError || !strings.Contains(r.stderr, "nothing was applied") ||
		!strings.Contains(r.stderr, bad+":3:5: rules[0].levle: unknown key") || !strings.Contains(r.stderr, bad+":5:") {
		t.Fatalf("apply of an invalid file = %+v", r)
	}

	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	op, err := trust.NewIdentity(root, "bob", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "bob.creds")
	if err := natsauth.WriteOperatorCreds(creds, root, op); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "good.yaml")
	if err := os.WriteFile(good, []byte(strictPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	bob := &harness{t: t, url: h.url, creds: creds}
	r = bob.run("policy", "apply", "-f", good)
	if r.code != ExitError || !strings.Contains(r.stderr, "are not an administrator's: applying a policy needs role admin (nothing was applied)") || !strings.Contains(r.stderr, "hint: ") {
		t.Fatalf("apply without role admin = %+v", r)
	}
	if r := h.run("policy", "apply"); r.code != ExitUsage || !strings.Contains(r.stderr, "-f FILE (or - for standard input) is required") {
		t.Fatalf("apply without -f = %+v", r)
	}
	if got := policyEvents(t, n); got != before {
		t.Fatalf("refused applies published %d policy.applied", got-before)
	}
}

// TestPolicyApplyLostRace: when another apply on the same version is
// folded first, the wait says so, naming the version that won.
func TestPolicyApplyLostRace(t *testing.T) {
	h, n := nodeHarness(t)
	base := policyInForce(t, n)
	winner, err := policy.Parse([]byte(strictPolicy), "w")
	if err != nil {
		t.Fatal(err)
	}
	d := event.MustDraft(event.PolicyApplied, "", event.PolicyAppliedData{Base: base, Name: winner.Name, Hash: winner.Hash(), Text: strictPolicy, Source: event.PolicyFromApply})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	a := newApp(Env{Stdin: strings.NewReader(""), Stdout: new(bytes.Buffer), Stderr: new(bytes.Buffer), Getenv: func(string) string { return "" }})
	defer a.close()
	a.server, a.creds, a.timeout, a.output = h.url, h.creds, 20*time.Second, formatText
	_, err = a.waitPolicy(ctx, base+1, policy.Default().Hash(), "ev-mine")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("policy version %d was taken by another apply made at the same time (strict, by %s", base+1, n.Operator.ID)) ||
		!strings.Contains(err.Error(), "yours (event ev-mine) was recorded and ignored") || api.HintOf(err) == "" {
		t.Fatalf("wait after a lost race = %v", err)
	}
	// The winner's own wait sees its version.
	v, err := a.waitPolicy(ctx, base+1, winner.Hash(), d.ID)
	if err != nil || v.Version != base+1 {
		t.Fatalf("the winner's wait = %+v, %v", v, err)
	}
}
