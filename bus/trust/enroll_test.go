package trust_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
)

func TestInitRootWritesSecretFilesOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	root, err := trust.InitRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !root.CanIssue() {
		t.Fatal("InitRoot returned a root that cannot issue")
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("root dir: %v, want mode 0700", err)
	}
	before := map[string][]byte{}
	for _, f := range []string{trust.RootKeyFile, trust.RootPubFile, trust.OperatorCredsFile} {
		p := filepath.Join(dir, f)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, st.Mode().Perm())
		}
		before[f], _ = os.ReadFile(p)
	}
	loaded, err := trust.LoadRoot(dir)
	if err != nil || !loaded.Public.Equal(root.Public) || !loaded.CanIssue() {
		t.Fatalf("LoadRoot after InitRoot: %v", err)
	}
	op, oroot, err := trust.ReadCreds(filepath.Join(dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	if op.ID != trust.DefaultOperator || !slices.Equal(op.Roles, trust.DefaultOperatorRoles) || !oroot.Public.Equal(root.Public) {
		t.Fatalf("operator creds: id %s roles %v", op.ID, op.Roles)
	}

	if _, err := trust.InitRoot(dir); !errors.Is(err, trust.ErrExists) {
		t.Fatalf("second InitRoot: %v, want ErrExists", err)
	}
	for f, b := range before {
		if now, _ := os.ReadFile(filepath.Join(dir, f)); string(now) != string(b) {
			t.Errorf("second InitRoot changed %s", f)
		}
	}

	// A node's data dir (root.pub only) is not a place for a new root either.
	node := t.TempDir()
	if err := os.WriteFile(filepath.Join(node, trust.RootPubFile), before[trust.RootPubFile], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.InitRoot(node); !errors.Is(err, trust.ErrExists) {
		t.Fatalf("InitRoot over root.pub: %v, want ErrExists", err)
	}
	if _, err := os.Stat(filepath.Join(node, trust.RootKeyFile)); err == nil {
		t.Fatal("refused InitRoot still wrote root.key")
	}
}

func TestLoadIssuer(t *testing.T) {
	dir := t.TempDir()
	root, err := trust.InitRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, trust.RootKeyFile)} {
		r, err := trust.LoadIssuer(p)
		if err != nil {
			t.Fatalf("LoadIssuer(%s): %v", p, err)
		}
		if !r.CanIssue() || !r.Public.Equal(root.Public) {
			t.Fatalf("LoadIssuer(%s): wrong root", p)
		}
	}
	if _, err := trust.LoadIssuer(filepath.Join(dir, trust.RootPubFile)); err == nil || !strings.Contains(err.Error(), "is a public key") {
		t.Errorf("LoadIssuer(root.pub): %v, want 'is a public key'", err)
	}
	pubOnly := t.TempDir()
	b, _ := os.ReadFile(filepath.Join(dir, trust.RootPubFile))
	if err := os.WriteFile(filepath.Join(pubOnly, trust.RootPubFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.LoadIssuer(pubOnly); err == nil || !strings.Contains(err.Error(), "holds no root.key") {
		t.Errorf("LoadIssuer(dir with root.pub only): %v", err)
	}
	if _, err := trust.LoadIssuer(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadIssuer(missing path) succeeded")
	}
}

// An enrolled data dir starts agentd's Bootstrap under the issuing root,
// without creating a root of its own, for exactly the enrolled name and
// roles.
func TestEnrollThenBootstrap(t *testing.T) {
	rootDir := t.TempDir()
	root, err := trust.InitRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	id, err := trust.Enroll(data, root, "exec-b", []string{"executor", "memory"}, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(data); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v, want mode 0700", err)
	}
	entries, _ := os.ReadDir(data)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if st, _ := os.Stat(filepath.Join(data, e.Name())); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", e.Name(), st.Mode().Perm())
		}
	}
	if want := []string{trust.NodeCredFile, trust.NodeKeyFile, trust.RootPubFile}; !slices.Equal(names, want) {
		t.Fatalf("enrolled dir holds %v, want %v (never the root key)", names, want)
	}

	broot, bid, err := trust.Bootstrap(data, "exec-b", []string{"memory", "executor"})
	if err != nil {
		t.Fatal(err)
	}
	if !broot.Public.Equal(root.Public) || broot.CanIssue() {
		t.Fatal("Bootstrap of an enrolled dir did not load the issuing root as verify-only")
	}
	if bid.ID != "exec-b" || bid.Credential != id.Credential {
		t.Fatalf("Bootstrap loaded %s, not the enrolled credential", bid.ID)
	}
	if _, err := os.Stat(filepath.Join(data, trust.RootKeyFile)); err == nil {
		t.Fatal("Bootstrap created a root key in an enrolled dir")
	}
	cred, err := root.Verify(bid.Credential, time.Now())
	if err != nil || cred.Kind != trust.KindNode || cred.Expires.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Fatalf("credential: %+v %v", cred, err)
	}

	// Another name or other roles: Bootstrap cannot reissue without root.key.
	for _, c := range []struct {
		name  string
		roles []string
	}{{"exec-c", []string{"executor", "memory"}}, {"exec-b", []string{"executor"}}, {"exec-b", []string{"executor", "memory", "planner"}}} {
		if _, _, err := trust.Bootstrap(data, c.name, c.roles); err == nil || !strings.Contains(err.Error(), "enroll it again") {
			t.Errorf("Bootstrap(%s %v) on a dir enrolled as exec-b [executor memory]: %v", c.name, c.roles, err)
		}
	}
}

func TestEnrollRefusals(t *testing.T) {
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	first, err := trust.Enroll(data, root, "n1", []string{"executor"}, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Enroll(data, root, "n1", []string{"executor"}, time.Hour, false); !errors.Is(err, trust.ErrExists) {
		t.Fatalf("second Enroll: %v, want ErrExists", err)
	}
	if _, id, err := trust.Bootstrap(data, "n1", []string{"executor"}); err != nil || id.Credential != first.Credential {
		t.Fatalf("refused Enroll changed the credential: %v", err)
	}
	second, err := trust.Enroll(data, root, "n2", []string{"planner"}, time.Hour, true)
	if err != nil {
		t.Fatalf("Enroll with force: %v", err)
	}
	if _, id, err := trust.Bootstrap(data, "n2", []string{"planner"}); err != nil || id.Credential != second.Credential {
		t.Fatalf("Bootstrap after a forced Enroll: %v", err)
	}

	// A dir of another cluster is refused even with force.
	other, _ := trust.NewRoot()
	if _, err := trust.Enroll(data, other, "n1", []string{"executor"}, time.Hour, true); err == nil || !strings.Contains(err.Error(), "another cluster") {
		t.Fatalf("Enroll into another root's dir: %v", err)
	}
	verifyOnly, err := trust.LoadRoot(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Enroll(t.TempDir(), verifyOnly, "n3", []string{"executor"}, time.Hour, false); err == nil {
		t.Fatal("a verify-only root enrolled a node")
	}

	for _, c := range []struct {
		id    string
		roles []string
		ttl   time.Duration
	}{
		{"", []string{"executor"}, time.Hour},
		{"a.b", []string{"executor"}, time.Hour},
		{"a b", []string{"executor"}, time.Hour},
		{"n", nil, time.Hour},
		{"n", []string{"executor"}, 0},
	} {
		dir := t.TempDir()
		if _, err := trust.Enroll(dir, root, c.id, c.roles, c.ttl, false); err == nil {
			t.Errorf("Enroll(%q, %v, %v) succeeded", c.id, c.roles, c.ttl)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("refused Enroll(%q) wrote %d files", c.id, len(entries))
		}
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"a", "node-1", "exec_B", "X9"} {
		if err := trust.CheckID(ok); err != nil {
			t.Errorf("CheckID(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a*", "a>", "ä", "a/b", " a"} {
		if err := trust.CheckID(bad); err == nil {
			t.Errorf("CheckID(%q) accepted", bad)
		}
	}
}
