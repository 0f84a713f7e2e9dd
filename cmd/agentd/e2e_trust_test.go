package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
)

// TestForeignCredsRefused: the built agentctl, given another cluster's
// operator.creds, fails every command it is asked with exit 1 and both
// roots named, and the ledger of the cluster it talked to holds nothing
// new — not even a rejection. With the cluster's own creds a write exits 0
// only once the ledger holds it.
func TestForeignCredsRefused(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	root, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	op, err := trust.NewIdentity(root, "mallory", trust.KindOperator, []string{"operator"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(t.TempDir(), "other.creds")
	if err := natsauth.WriteOperatorCreds(foreign, root, op); err != nil {
		t.Fatal(err)
	}
	before := len(a.audit())

	for _, args := range [][]string{
		{"goal", "submit", "-f", testdata("ok.yaml"), "--wait"},
		{"memory", "put", "shared", "k", "v"},
		{"run", "list"},
		{"audit", "tail"},
		{"version"},
	} {
		r := a.ctl(append([]string{"--creds", foreign}, args...)...)
		// The cluster's NATS refuses the other cluster's user before
		// anything is asked or published.
		if r.code != 1 || !strings.Contains(r.stderr, "refused the credentials") || !strings.Contains(r.stderr, "issued by root "+root.KeyID()) {
			t.Errorf("with another cluster's creds: %s", r)
		}
	}
	lines := a.audit()
	for _, l := range lines[before:] {
		if l.Type == "event.rejected" || l.Node == "mallory" {
			t.Errorf("the ledger recorded %s from %s (seq %d)", l.Type, l.Node, l.Seq)
		}
	}

	a.mustCtl("memory", "put", "shared", "k", "v")
	found := false
	for _, l := range a.audit()[len(lines):] {
		found = found || l.Type == "memory.put"
	}
	if !found {
		t.Error("memory put exited 0 but the ledger holds no memory.put")
	}
}
