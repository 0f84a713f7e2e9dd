package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRotateAndRetireRoot on a real node (embedded NATS in operator mode,
// real ledger): rotate-root makes root R1 and the ledger trusts it — its
// administrator's events are accepted; R1's administrator rotates again to
// R2; retire-root R1 with R2's administrator is accepted, after which NATS
// refuses R1's users and the ledger refuses what R1's credentials sign
// (root_retired), while the genesis's and R2's go on and the ledger
// verifies. A non-administrator cannot rotate, and the roots that stay
// cannot be retired through the wrong directory.
func TestRotateAndRetireRoot(t *testing.T) {
	h, n := nodeHarness(t)
	genesis, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r1Dir, r2Dir := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	r := h.run("keys", "rotate-root", "--root", n.Dir, "--new", r1Dir, "--reason", "yearly", "--timeout", "10s")
	if r.code != ExitOK || !strings.Contains(r.stdout, "the cluster trusts root") {
		t.Fatalf("rotate-root = %+v", r)
	}
	r1, err := trust.LoadRoot(r1Dir)
	if err != nil {
		t.Fatal(err)
	}
	if r1.GenesisID() != genesis.KeyID() || !r1.CanIssue() {
		t.Fatalf("R1 %s has genesis %s, want %s", r1.KeyID(), r1.GenesisID(), genesis.KeyID())
	}
	if count(t, n.API, string(event.RootAdded), r1.KeyID()) != 1 {
		t.Fatal("trust.root_added of R1 is not in the ledger")
	}

	h1 := *h
	h1.creds = filepath.Join(r1Dir, trust.OperatorCredsFile)
	if r := h1.run("keys", "rotate-root", "--root", r1Dir, "--new", r2Dir, "--reason", "again", "--timeout", "10s"); r.code != ExitOK {
		t.Fatalf("rotate-root by R1's administrator = %+v", r)
	}
	r2, err := trust.LoadRoot(r2Dir)
	if err != nil {
		t.Fatal(err)
	}
	h2 := *h
	h2.creds = filepath.Join(r2Dir, trust.OperatorCredsFile)
	if r := h2.run("keys", "retire-root", r2.KeyID(), "--root", r2Dir, "--reason", "no"); r.code != ExitUsage {
		t.Fatalf("retire-root of the root that stays = %+v", r)
	}
	if r := h2.run("keys", "retire-root", r1.KeyID(), "--root", r2Dir, "--reason", "cutover", "--timeout", "10s"); r.code != ExitOK || !strings.Contains(r.stdout, "retired root "+r1.KeyID()) {
		t.Fatalf("retire-root = %+v", r)
	}

	// NATS refuses R1's users; the genesis's and R2's go on.
	if r := h1.run("node", "revoke", "ghost", "--reason", "x"); r.code == ExitOK || !strings.Contains(r.stderr, "Authorization") {
		t.Fatalf("R1's administrator still acts after its root's retirement: %+v", r)
	}
	for _, hh := range []harness{*h, h2} {
		if r := hh.run("node", "revoke", "ghost", "--reason", "x", "--timeout", "10s"); r.code != ExitOK {
			t.Fatalf("revoke with %s = %+v", hh.creds, r)
		}
	}
	// The ledger refuses what R1's credentials sign, sent by another way
	// onto the bus (the harness).
	ex, err := trust.NewIdentity(r1, "exec-r1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	harness := bustest.Harness(t, bus.ConnConfig{URLs: []string{n.NATSURL()}}, genesis)
	if err := bus.PublishSigned(context.Background(), harness.JS, ex, event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{Slots: 1, Incarnation: "x"})); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "R1's credential refused", func() bool {
		return count(t, n.API, string(event.Rejected), string(event.RejectRootRetired)) == 1
	})
	if r := h.run("ledger", "verify"); r.code != ExitOK {
		t.Fatalf("ledger verify = %+v", r)
	}

	// The history verifies offline with the genesis's public key alone
	// (what is left when a root is lost), and not with another root's.
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	if r := h.run("ledger", "export", "-f", export); r.code != ExitOK {
		t.Fatalf("ledger export = %+v", r)
	}
	r = h.run("keys", "verify-history", export, "--genesis", filepath.Join(n.Dir, trust.RootPubFile))
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(r.stdout, "root "+r1.KeyID()+"  added at stream seq") || !strings.Contains(r.stdout, "retired at stream seq") {
		t.Fatalf("verify-history = %+v", r)
	}
	if r := h.run("keys", "verify-history", export, "--genesis", filepath.Join(r2Dir, trust.RootPubFile)); r.code != ExitError || !strings.Contains(r.stdout, "FAILED") {
		t.Fatalf("verify-history with another root = %+v", r)
	}

	// A credential that is not an administrator's rotates nothing.
	op, err := trust.NewIdentity(genesis, "bob", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hb := *h
	hb.creds = filepath.Join(t.TempDir(), "bob.creds")
	if err := trust.WriteCreds(hb.creds, op, genesis); err != nil {
		t.Fatal(err)
	}
	if r := hb.run("keys", "rotate-root", "--root", n.Dir, "--new", t.TempDir(), "--reason", "x"); r.code != ExitError || !strings.Contains(r.stderr, "needs role admin") {
		t.Fatalf("rotate-root by an operator = %+v", r)
	}
}

// TestLostRoot: the way back when the root key is lost, on a real node: a
// new root made apart (keys init) is added with a surviving
// administrator's credential (keys add-root), the lost root is retired
// (keys retire-root without --root); from then on the ledger refuses what
// the lost root's credentials sign and accepts the new root's, and the
// whole history verifies offline with the lost root's public key.
func TestLostRoot(t *testing.T) {
	h, n := nodeHarness(t)
	lost, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	newDir := filepath.Join(t.TempDir(), "new-root")
	if r := h.run("keys", "init", "--dir", newDir); r.code != ExitOK {
		t.Fatalf("keys init = %+v", r)
	}
	next, err := trust.LoadRoot(newDir)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.run("keys", "add-root", newDir, "--reason", "root key lost", "--timeout", "10s"); r.code != ExitOK || !strings.Contains(r.stdout, next.KeyID()) {
		t.Fatalf("add-root = %+v", r)
	}
	if r := h.run("keys", "retire-root", lost.KeyID(), "--reason", "root key lost", "--timeout", "10s"); r.code != ExitOK || !strings.Contains(r.stdout, "NATS was not told") {
		t.Fatalf("retire-root = %+v", r)
	}
	// The lost root's administrator acts no more: the ledger refuses it.
	if r := h.run("keys", "retire-root", next.KeyID(), "--reason", "no", "--timeout", "10s"); r.code == ExitOK || !strings.Contains(r.stderr, "root_retired") {
		t.Fatalf("retire-root by the lost root's administrator = %+v", r)
	}

	harness := bustest.Harness(t, bus.ConnConfig{URLs: []string{n.NATSURL()}}, lost)
	publish := func(root *trust.Root, id string) {
		t.Helper()
		ex, err := trust.NewIdentity(root, id, trust.KindNode, []string{event.RoleExecutor}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := bus.PublishSigned(context.Background(), harness.JS, ex, event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{Slots: 1, Incarnation: id})); err != nil {
			t.Fatal(err)
		}
	}
	publish(lost, "exec-lost")
	publish(next, "exec-new")
	poll.Eventually(t, 10*time.Second, "the new root's executor accepted", func() bool {
		return count(t, n.API, string(event.ExecutorOnline), "exec-new") == 1
	})
	if got := count(t, n.API, string(event.Rejected), string(event.RejectRootRetired)); got < 1 {
		t.Fatal("the lost root's credential was not refused with root_retired")
	}
	if got := count(t, n.API, string(event.ExecutorOnline), "exec-lost"); got != 0 {
		t.Fatal("the lost root's credential was accepted after its retirement")
	}
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	if r := h.run("ledger", "export", "-f", export); r.code != ExitOK {
		t.Fatalf("ledger export = %+v", r)
	}
	if r := h.run("keys", "verify-history", export, "--genesis", filepath.Join(n.Dir, trust.RootPubFile)); r.code != ExitOK || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Fatalf("verify-history = %+v", r)
	}
}

// TestRotationWithoutOutage: a running node moves to a new root with no
// restart and no outage. After rotate-root, node renew --root NEW gives it
// a credential and NATS user of the new root (same key), which it loads
// and reconnects with; after retire-root of the genesis the node, still
// connected, runs a goal an operator of the new root submits, and nothing
// it signs is refused.
func TestRotationWithoutOutage(t *testing.T) {
	dir := t.TempDir()
	root := nodetest.NewRoot(t, dir)
	cfg := nodetest.Config(dir)
	// A short lifetime makes the node look at its credential every few
	// seconds.
	if _, err := natsauth.Enroll(dir, root, cfg.Name, cfg.Roles, 30*time.Second, true); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, cfg)
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(dir, trust.OperatorCredsFile)}
	newDir := filepath.Join(t.TempDir(), "new-root")
	if r := h.run("keys", "rotate-root", "--root", dir, "--new", newDir, "--reason", "yearly", "--timeout", "10s"); r.code != ExitOK {
		t.Fatalf("rotate-root = %+v", r)
	}
	next, err := trust.LoadRoot(newDir)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.run("node", "renew", cfg.Name, "--root", newDir, "--data", dir, "--ttl", "1h"); r.code != ExitOK {
		t.Fatalf("node renew --root NEW = %+v", r)
	}
	// The node reconnects to NATS with its renewed user: a query may go
	// unanswered meanwhile, and is asked again.
	signedByNew := func() bool {
		for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
			if err != nil {
				return false
			}
			if l.Node == cfg.Name && l.JWS != "" {
				if c, err := trust.ReadCredential(envelope.PeekCredential([]byte(l.JWS))); err == nil && c.Issuer == next.KeyID() {
					return true
				}
			}
		}
		return false
	}
	poll.Eventually(t, 60*time.Second, "the node signs with its credential of the new root", func() bool {
		run := n.Submit(t, "one.yaml", onePlan)
		if poll.Wait(30*time.Second, func() bool {
			s, err := n.API.RunSummary(context.Background(), run)
			return err == nil && s.Status == event.RunSucceeded
		}) != nil {
			return false
		}
		return signedByNew()
	})

	h2 := *h
	h2.creds = filepath.Join(newDir, trust.OperatorCredsFile)
	if r := h2.run("keys", "retire-root", root.KeyID(), "--root", newDir, "--reason", "cutover", "--timeout", "10s"); r.code != ExitOK {
		t.Fatalf("retire-root = %+v", r)
	}
	// The test's own connection was a user of the genesis: connect as the
	// new root's administrator.
	opts, _, err := natsauth.CredsOptions(h2.creds)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(n.NATSURL(), opts...)
	if err != nil {
		t.Fatalf("the new root's administrator connects after the cutover: %v", err)
	}
	t.Cleanup(nc.Close)
	if n.JS, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	n.API = api.NewClient(nc, 10*time.Second)
	if n.Operator, _, err = trust.ReadCreds(h2.creds); err != nil {
		t.Fatal(err)
	}
	run := n.Submit(t, "one.yaml", onePlan)
	if got := n.WaitRun(t, run, 30*time.Second); got.Status != event.RunSucceeded {
		t.Fatalf("a run after the cutover: %s (%s)", got.Status, got.Reason)
	}
	if got := count(t, n.API, string(event.Rejected), ""); got != 0 {
		t.Fatalf("%d messages refused across the rotation", got)
	}
	if r := h2.run("ledger", "verify"); r.code != ExitOK {
		t.Fatalf("ledger verify = %+v", r)
	}
}
