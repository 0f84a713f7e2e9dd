package trust_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/trust"
)

// TestRotatedRootFiles: a rotated root saved in a directory of its own
// loads back with its genesis, the roots it trusts and the seeds it
// inherited; a data dir of the cluster enrolled again with it keeps the
// genesis as root.pub, trusts both roots and loads the node's new
// credential; after the cutover the rotated root trusts the genesis no
// more. A data dir of another cluster is refused.
func TestRotatedRootFiles(t *testing.T) {
	oldDir, newDir, data := t.TempDir(), t.TempDir(), t.TempDir()
	old, err := trust.InitRoot(oldDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Enroll(data, old, "n1", []string{"executor"}, time.Hour, false); err != nil {
		t.Fatal(err)
	}
	next, err := trust.Rotate(old, "test/purpose")
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.SaveRoot(newDir, next); err != nil {
		t.Fatal(err)
	}
	loaded, err := trust.LoadRoot(newDir)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Public.Equal(next.Public) || !loaded.CanIssue() || loaded.GenesisID() != old.KeyID() {
		t.Fatalf("rotated root loads as %s (genesis %s), want %s (genesis %s)", loaded.KeyID(), loaded.GenesisID(), next.KeyID(), old.KeyID())
	}
	if _, ok := loaded.RootKey(old.KeyID()); !ok {
		t.Fatal("the rotated root does not trust the old one during the overlap")
	}
	want, _ := old.DeriveSeed("test/purpose")
	got, err := loaded.DeriveSeed("test/purpose")
	if err != nil || string(got) != string(want) {
		t.Fatal("the rotated root does not derive the inherited seed as the old root did")
	}
	if own, _ := loaded.DeriveSeed("other"); own == nil || string(own) == string(mustSeed(t, old, "other")) {
		t.Fatal("a purpose not inherited derives the old root's seed")
	}

	// Enrolled again with the new root.
	if _, err := trust.Enroll(data, loaded, "n1", []string{"executor"}, time.Hour, true); err != nil {
		t.Fatal(err)
	}
	dataRoot, err := trust.LoadRoot(data)
	if err != nil {
		t.Fatal(err)
	}
	if !dataRoot.Public.Equal(old.Public) {
		t.Fatal("root.pub of the data dir is no longer the genesis")
	}
	id, err := trust.LoadIdentity(data, dataRoot)
	if err != nil {
		t.Fatalf("the node's credential of the new root: %v", err)
	}
	c, _ := trust.ReadCredential(id.Credential)
	if c.Issuer != next.KeyID() {
		t.Fatalf("credential issued by %s, want %s", c.Issuer, next.KeyID())
	}
	if _, ok := dataRoot.RootKey(next.KeyID()); !ok {
		t.Fatal("the data dir does not trust the new root")
	}
	if _, err := os.Stat(filepath.Join(data, trust.InheritedFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a data dir got the inherited seeds")
	}

	// The cutover: the rotated root no longer trusts the genesis.
	if err := trust.SaveRoot(newDir, loaded.WithoutRoot(old.KeyID())); err != nil {
		t.Fatal(err)
	}
	after, err := trust.LoadRoot(newDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.RootKey(old.KeyID()); ok {
		t.Fatal("the retired genesis is still trusted")
	}
	if after.GenesisID() != old.KeyID() {
		t.Fatal("the cutover forgot the cluster's genesis")
	}
	oldOp, err := trust.NewIdentity(old, "op", trust.KindOperator, []string{"operator"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := after.Verify(oldOp.Credential, time.Now()); err == nil {
		t.Fatal("a credential of the retired genesis verifies")
	}

	// Another cluster's data dir is refused.
	stranger, _ := trust.NewRoot()
	if _, err := trust.Enroll(data, stranger, "n1", []string{"executor"}, time.Hour, true); err == nil {
		t.Fatal("a data dir enrolled with another cluster's root")
	}
}

func mustSeed(t *testing.T, r *trust.Root, p string) []byte {
	t.Helper()
	s, err := r.DeriveSeed(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRenewByNewRoot: a node renewed by the root of a rotation keeps its
// key, its credential moves to the new root, and its data dir trusts the
// new root, so that the node loads the renewed credential.
func TestRenewByNewRoot(t *testing.T) {
	oldDir, data := t.TempDir(), t.TempDir()
	old, err := trust.InitRoot(oldDir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := trust.Enroll(data, old, "n1", []string{"executor"}, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	next, err := trust.Rotate(old)
	if err != nil {
		t.Fatal(err)
	}
	c, err := trust.RenewNode(data, next, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer != next.KeyID() || !c.PublicKey.Equal(id.Key.Public()) {
		t.Fatalf("renewed credential issued by %s for another key, want %s and the same key", c.Issuer, next.KeyID())
	}
	root, err := trust.LoadRoot(data)
	if err != nil {
		t.Fatal(err)
	}
	if !root.Public.Equal(old.Public) {
		t.Fatal("root.pub of the data dir is no longer the genesis")
	}
	got, err := trust.LoadIdentity(data, root)
	if err != nil || got.Credential == id.Credential {
		t.Fatalf("the node does not load its renewed credential: %v", err)
	}
}

// TestRotateAfterCutover: a root rotated from one that retired the
// genesis does not trust the genesis again.
func TestRotateAfterCutover(t *testing.T) {
	g, _ := trust.NewRoot()
	r1, err := trust.Rotate(g)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := trust.Rotate(r1.WithoutRoot(g.KeyID()))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r2.RootKey(g.KeyID()); ok {
		t.Fatal("the retired genesis is trusted again after another rotation")
	}
	if _, ok := r2.RootKey(r1.KeyID()); !ok || r2.GenesisID() != g.KeyID() {
		t.Fatal("the rotation lost the root it succeeds or the genesis")
	}
}

// TestRootProof: a root's proof verifies for the cluster it names, and
// not for another cluster, another root or a changed proof.
func TestRootProof(t *testing.T) {
	r, _ := trust.NewRoot()
	g, _ := trust.NewRoot()
	other, _ := trust.NewRoot()
	p, err := r.RootProof(g.KeyID())
	if err != nil {
		t.Fatal(err)
	}
	if !trust.VerifyRootProof(r.Public, g.KeyID(), p) {
		t.Fatal("a root's proof does not verify")
	}
	bad := []byte(p)
	bad[0] ^= 1
	for _, c := range []struct {
		pub   []byte
		g, p  string
		label string
	}{
		{r.Public, other.KeyID(), p, "another cluster"},
		{other.Public, g.KeyID(), p, "another root"},
		{r.Public, g.KeyID(), string(bad), "a changed proof"},
		{r.Public, g.KeyID(), "", "no proof"},
	} {
		if trust.VerifyRootProof(c.pub, c.g, c.p) {
			t.Errorf("a proof verifies for %s", c.label)
		}
	}
	if _, err := trust.PublicRoot(r.Public).RootProof(g.KeyID()); err == nil {
		t.Error("a root without its private key made a proof")
	}
}
