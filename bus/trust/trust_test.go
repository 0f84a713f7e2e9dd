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

func TestBootstrapCreatesAndReloads(t *testing.T) {
	dir := t.TempDir()
	root, id, err := trust.Bootstrap(dir, "node-a", []string{"executor", "planner"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{trust.RootKeyFile, trust.RootPubFile, trust.NodeKeyFile, trust.NodeCredFile, trust.OperatorCredsFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	root2, id2, err := trust.Bootstrap(dir, "node-a", []string{"planner", "executor"})
	if err != nil {
		t.Fatal(err)
	}
	if !root2.Public.Equal(root.Public) || id2.Credential != id.Credential {
		t.Fatal("second bootstrap made new keys")
	}
	op, oroot, err := trust.ReadCreds(filepath.Join(dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	if op.ID != "operator" || !oroot.Public.Equal(root.Public) || !slices.Equal(op.Roles, trust.DefaultOperatorRoles) {
		t.Fatalf("operator creds: %+v", op)
	}
	// Renaming the node reissues its credential under the same root.
	_, id3, err := trust.Bootstrap(dir, "node-b", []string{"executor"})
	if err != nil {
		t.Fatal(err)
	}
	if id3.ID != "node-b" {
		t.Fatalf("id = %s", id3.ID)
	}
}

func TestVerifyRefusesForeignAndExpired(t *testing.T) {
	r1, _ := trust.NewRoot()
	r2, _ := trust.NewRoot()
	id, err := trust.NewIdentity(r2, "n", trust.KindNode, []string{"executor"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Verify(id.Credential, time.Now()); !errors.Is(err, trust.ErrBadCredential) {
		t.Fatalf("foreign credential: %v", err)
	}
	if _, err := r2.Verify(id.Credential, time.Now().Add(2*time.Hour)); !errors.Is(err, trust.ErrBadCredential) {
		t.Fatalf("expired credential: %v", err)
	}
	if _, err := r2.Verify(id.Credential, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyOnlyRootCannotIssue(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := trust.Bootstrap(dir, "a", []string{"executor"}); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	b, _ := os.ReadFile(filepath.Join(dir, trust.RootPubFile))
	if err := os.WriteFile(filepath.Join(other, trust.RootPubFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trust.Bootstrap(other, "b", []string{"executor"}); err == nil {
		t.Fatal("bootstrap without root key and without credential succeeded")
	}
}

// TestReadCredsRoot: the root of a creds file is read even when its
// credential has expired (which ReadCreds refuses), and it is the
// fingerprint the credential names as its issuer.
func TestReadCredsRoot(t *testing.T) {
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	op, err := trust.NewIdentity(root, "old", trust.KindOperator, []string{"operator"}, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.creds")
	if err := trust.WriteCreds(path, op, root); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trust.ReadCreds(path); !errors.Is(err, trust.ErrExpired) {
		t.Fatalf("ReadCreds of an expired credential = %v, want ErrExpired", err)
	}
	got, err := trust.ReadCredsRoot(path)
	if err != nil || !got.Public.Equal(root.Public) || got.KeyID() != root.KeyID() || len(got.KeyID()) != 16 {
		t.Fatalf("ReadCredsRoot = %v, %v; want the root %s", got, err, root.KeyID())
	}
	if _, err := trust.ReadCredsRoot(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadCredsRoot of no file = %v, want ErrNotExist", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.creds")
	if err := os.WriteFile(bad, []byte("not a creds file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.ReadCredsRoot(bad); err == nil || !strings.Contains(err.Error(), "not a creds file") {
		t.Errorf("ReadCredsRoot of garbage = %v", err)
	}
}
