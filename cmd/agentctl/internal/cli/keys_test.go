package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
)

// offline runs agentctl with a --server nothing listens on: the keys and
// node commands must not need it.
func offline(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{"--server", "nats://127.0.0.1:1", "--timeout", "1s"}, args...)
	code := Run(context.Background(), full, Env{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestKeysInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	r := offline(t, "keys", "init", "--dir", dir)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("keys init = %+v", r)
	}
	for _, f := range []string{trust.RootKeyFile, trust.RootPubFile, trust.OperatorCredsFile} {
		p := filepath.Join(dir, f)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("keys init did not write %s: %v", f, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, st.Mode().Perm())
		}
		if !strings.Contains(r.stdout, p) {
			t.Errorf("keys init does not say it wrote %s:\n%s", p, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "agentctl node enroll NAME --roles ROLES --root "+dir) {
		t.Errorf("keys init shows no next step:\n%s", r.stdout)
	}
	root, err := trust.LoadRoot(dir)
	if err != nil || !root.CanIssue() || !strings.Contains(r.stdout, root.KeyID()) {
		t.Fatalf("keys init wrote no issuing root, or does not print its fingerprint: %v\n%s", err, r.stdout)
	}
	key, _ := os.ReadFile(filepath.Join(dir, trust.RootKeyFile))

	again := offline(t, "keys", "init", "--dir", dir)
	if again.code != ExitError || !strings.Contains(again.stderr, "file exists") || !strings.Contains(again.stderr, "hint: this directory already holds a cluster root") {
		t.Fatalf("second keys init = %+v", again)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, trust.RootKeyFile)); !bytes.Equal(now, key) {
		t.Fatal("second keys init replaced root.key")
	}

	js := offline(t, "keys", "init", "--dir", filepath.Join(t.TempDir(), "r2"), "-o", "json")
	got := decodeJSON[keysInitResult](t, js.stdout)
	if js.code != 0 || len(got.Root) != 16 || len(got.Files) != 4 {
		t.Fatalf("keys init -o json = %+v", js)
	}
}

func TestNodeEnroll(t *testing.T) {
	rootDir := t.TempDir()
	if r := offline(t, "keys", "init", "--dir", rootDir); r.code != 0 {
		t.Fatalf("keys init = %+v", r)
	}
	root, err := trust.LoadRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data-b")
	r := offline(t, "node", "enroll", "exec-b", "--roles", "executor,memory", "--root", rootDir, "--out", data)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("node enroll = %+v", r)
	}
	if !strings.Contains(r.stdout, "agentd --data "+data+" --name exec-b --roles executor,memory") {
		t.Errorf("node enroll does not say how to start the node:\n%s", r.stdout)
	}
	if st, err := os.Stat(data); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v, want mode 0700", err)
	}
	for _, f := range []string{trust.RootPubFile, trust.NodeKeyFile, trust.NodeCredFile} {
		if st, err := os.Stat(filepath.Join(data, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}

	// agentd's Bootstrap loads it under the original root, creates no root.
	broot, id, err := trust.Bootstrap(data, "exec-b", []string{"memory", "executor"})
	if err != nil {
		t.Fatalf("Bootstrap of the enrolled dir: %v", err)
	}
	if !broot.Public.Equal(root.Public) || broot.CanIssue() || id.ID != "exec-b" {
		t.Fatalf("Bootstrap: root %s can issue %v, id %s", broot.KeyID(), broot.CanIssue(), id.ID)
	}
	if _, err := os.Stat(filepath.Join(data, trust.RootKeyFile)); err == nil {
		t.Fatal("an enrolled dir holds root.key")
	}
	// Started with another name or roles, the node is refused as today.
	if _, _, err := trust.Bootstrap(data, "exec-c", []string{"executor", "memory"}); err == nil {
		t.Error("Bootstrap accepted the credential for another name")
	}
	if _, _, err := trust.Bootstrap(data, "exec-b", []string{"executor"}); err == nil {
		t.Error("Bootstrap accepted the credential for other roles")
	}

	// A second enroll is refused, --force replaces; the root key file works
	// as --root too.
	cred, _ := os.ReadFile(filepath.Join(data, trust.NodeCredFile))
	again := offline(t, "node", "enroll", "exec-b", "--roles", "executor", "--root", rootDir, "--out", data)
	if again.code != ExitError || !strings.Contains(again.stderr, "file exists") || !strings.Contains(again.stderr, "hint: ") || !strings.Contains(again.stderr, "--force") {
		t.Fatalf("enroll over an enrolled dir = %+v", again)
	}
	if now, _ := os.ReadFile(filepath.Join(data, trust.NodeCredFile)); !bytes.Equal(now, cred) {
		t.Fatal("refused enroll replaced node.cred")
	}
	forced := offline(t, "node", "enroll", "exec-b", "--roles", "executor", "--root", filepath.Join(rootDir, trust.RootKeyFile), "--out", data, "--force", "-o", "json")
	if forced.code != 0 {
		t.Fatalf("enroll --force = %+v", forced)
	}
	res := decodeJSON[enrollResult](t, forced.stdout)
	if res.Node != "exec-b" || !slices.Equal(res.Roles, []string{"executor"}) || res.Root != root.KeyID() || res.Expires.IsZero() {
		t.Errorf("enroll -o json = %+v", res)
	}
	if _, _, err := trust.Bootstrap(data, "exec-b", []string{"executor"}); err != nil {
		t.Errorf("Bootstrap after enroll --force: %v", err)
	}

	// Only the root key issues.
	pubOnly := offline(t, "node", "enroll", "x", "--roles", "executor", "--root", filepath.Join(rootDir, trust.RootPubFile), "--out", t.TempDir())
	if pubOnly.code != ExitError || !strings.Contains(pubOnly.stderr, "is a public key") {
		t.Errorf("enroll with root.pub = %+v", pubOnly)
	}
	noKey := offline(t, "node", "enroll", "x", "--roles", "executor", "--root", data, "--out", t.TempDir())
	if noKey.code != ExitError || !strings.Contains(noKey.stderr, "holds no root.key") {
		t.Errorf("enroll from a node's data dir = %+v", noKey)
	}
}

func TestNodeEnrollUsage(t *testing.T) {
	rootDir := t.TempDir()
	if _, err := natsauth.InitRoot(rootDir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"node", "enroll", "exec.b", "--roles", "executor", "--root", rootDir, "--out", out},
		{"node", "enroll", "exec b", "--roles", "executor", "--root", rootDir, "--out", out},
		{"node", "enroll", "exec-b", "--roles", "executor,janitor", "--root", rootDir, "--out", out},
		{"node", "enroll", "exec-b", "--roles", "operator", "--root", rootDir, "--out", out},
		{"node", "enroll", "exec-b", "--roles", "executor,executor", "--root", rootDir, "--out", out},
		{"node", "enroll", "exec-b", "--root", rootDir, "--out", out},
		{"node", "enroll", "exec-b", "--roles", "executor", "--out", out},
		{"node", "enroll", "exec-b", "--roles", "executor", "--root", rootDir},
		{"node", "enroll", "exec-b", "--roles", "executor", "--root", rootDir, "--out", out, "--ttl", "0s"},
		{"node", "enroll", "--roles", "executor", "--root", rootDir, "--out", out},
		{"node", "enroll", "a", "b", "--roles", "executor", "--root", rootDir, "--out", out},
		{"node", "bogus"},
		{"keys", "init"},
		{"keys", "init", "--dir", out, "extra"},
		{"keys", "operator", "bad.name", "--root", rootDir, "--out", filepath.Join(out, "x.creds")},
		{"keys", "operator", "bob", "--root", rootDir},
	} {
		r := offline(t, args...)
		if r.code != ExitUsage || !strings.HasPrefix(r.stderr, "error: ") {
			t.Errorf("agentctl %q = %d %q, want usage error (2)", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a usage error wrote files")
	}
	r := offline(t, "node", "enroll", "x", "--roles", "janitor", "--root", rootDir, "--out", out)
	if !strings.Contains(r.stderr, strings.Join(event.NodeRoles, ",")) {
		t.Errorf("unknown role error does not list the roles: %q", r.stderr)
	}
}

func TestKeysOperator(t *testing.T) {
	rootDir := t.TempDir()
	root, err := natsauth.InitRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "alice", "alice.creds")
	r := offline(t, "keys", "operator", "alice", "--root", rootDir, "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "issued operator alice") {
		t.Fatalf("keys operator = %+v", r)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("creds file: %v, want mode 0600", err)
	}
	id, croot, err := trust.ReadCreds(out)
	if err != nil {
		t.Fatal(err)
	}
	if id.ID != "alice" || !slices.Equal(id.Roles, []string{event.RoleOperator}) || !croot.Public.Equal(root.Public) {
		t.Fatalf("creds: %s %v", id.ID, id.Roles)
	}
	// The CLI accepts it as operator credentials.
	a := newApp(Env{Getenv: func(string) string { return "" }})
	a.creds = out
	if got, _, err := a.identity(); err != nil || got.ID != "alice" {
		t.Fatalf("identity from the issued creds: %v", err)
	}
	before, _ := os.ReadFile(out)
	again := offline(t, "keys", "operator", "bob", "--root", rootDir, "--out", out)
	if again.code != ExitError || !strings.Contains(again.stderr, "file exists") {
		t.Fatalf("keys operator over a file = %+v", again)
	}
	if now, _ := os.ReadFile(out); !bytes.Equal(now, before) {
		t.Fatal("refused keys operator replaced the file")
	}
	if r := offline(t, "keys", "operator", "bob", "--root", rootDir, "--out", out, "--force"); r.code != 0 {
		t.Fatalf("keys operator --force = %+v", r)
	}
	if id, _, err := trust.ReadCreds(out); err != nil || id.ID != "bob" {
		t.Fatalf("after --force: %v", err)
	}
}

// TestKeysAPIToken: the token printed for an operator's credentials
// verifies against its root and names the operator; a lifetime over the
// limit is a usage error.
func TestKeysAPIToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	if r := offline(t, "keys", "init", "--dir", dir); r.code != 0 {
		t.Fatalf("keys init = %+v", r)
	}
	creds := filepath.Join(dir, trust.OperatorCredsFile)
	r := offline(t, "--creds", creds, "keys", "api-token", "--ttl", "5m")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("keys api-token = %+v", r)
	}
	root, err := trust.LoadRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := trust.VerifyAPIToken(root, strings.TrimSpace(r.stdout), time.Now())
	if err != nil || cred.Kind != trust.KindOperator {
		t.Fatalf("token does not verify: %+v %v", cred, err)
	}
	if long := offline(t, "--creds", creds, "keys", "api-token", "--ttl", "2h"); long.code != ExitUsage || !strings.Contains(long.stderr, "at most 1h") {
		t.Errorf("--ttl 2h = %+v", long)
	}
}

// TestNodeRenew: node renew issues a later credential for the same key,
// roles and NATS user, and a NATS user JWT for its lifetime, from the
// public credential alone (node.key is not needed).
func TestNodeRenew(t *testing.T) {
	rootDir, data := t.TempDir(), t.TempDir()
	if r := offline(t, "keys", "init", "--dir", rootDir); r.code != 0 {
		t.Fatalf("keys init = %+v", r)
	}
	if r := offline(t, "node", "enroll", "exec-b", "--roles", "executor", "--root", rootDir, "--out", data, "--ttl", "1h"); r.code != 0 {
		t.Fatalf("node enroll = %+v", r)
	}
	root, err := trust.LoadRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := trust.LoadIdentity(data, root)
	if err != nil {
		t.Fatal(err)
	}
	// The root holder renews from the public credential: node.key is
	// not there.
	key := filepath.Join(data, trust.NodeKeyFile)
	if err := os.Rename(key, key+".away"); err != nil {
		t.Fatal(err)
	}
	r := offline(t, "node", "renew", "exec-b", "--root", rootDir, "--data", data, "--ttl", "48h", "-o", "json")
	got := decodeJSON[enrollResult](t, r.stdout)
	if r.code != 0 || got.Node != "exec-b" || time.Until(got.Expires) < 47*time.Hour {
		t.Fatalf("node renew = %+v", r)
	}
	if err := os.Rename(key+".away", key); err != nil {
		t.Fatal(err)
	}
	after, err := trust.LoadIdentity(data, root)
	if err != nil {
		t.Fatal(err)
	}
	if after.Credential == before.Credential || !after.Key.Equal(before.Key) || !slices.Equal(after.Roles, before.Roles) {
		t.Fatal("the renewed credential is not a new one for the same key and roles")
	}
	u, err := natsauth.LoadNodeUser(data, after)
	if err != nil || time.Until(u.Expires) < 47*time.Hour {
		t.Fatalf("the NATS user after renewal: %+v %v", u, err)
	}
	if r := offline(t, "node", "renew", "exec-c", "--root", rootDir, "--data", data); r.code != ExitError || !strings.Contains(r.stderr, "holds the credential of node exec-b") {
		t.Errorf("renew under another name = %+v", r)
	}
}
