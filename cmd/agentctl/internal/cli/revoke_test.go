package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestNodeRevokeRefusedByNATSAndLedger: an executor's event is accepted;
// node revoke --root records the revocation and pushes it to NATS, which
// closes the executor's connection and refuses the next one; an event it
// signs after the revocation (published by the test harness, as a thief
// with another way onto the bus would) is refused by the ledger with
// credential_revoked, and the earlier one stays.
func TestNodeRevokeRefusedByNATSAndLedger(t *testing.T) {
	h, n := nodeHarness(t)
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := trust.NewIdentity(root, "exec-x", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a, err := natsauth.NewAuthority(root)
	if err != nil {
		t.Fatal(err)
	}
	co, err := a.UserOptions(root, exec)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(n.NATSURL(), append(co, nats.MaxReconnects(0), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatalf("the executor connects before its revocation: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	online := func(signer *jetstream.JetStream) error {
		return bus.PublishSigned(ctx, *signer, exec, event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{Slots: 1, Incarnation: "x"}))
	}
	if err := online(&js); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the executor's event accepted", func() bool { return count(t, n.API, "executor.online", "exec-x") == 1 })

	r := h.run("node", "revoke", "exec-x", "--reason", "stolen", "--root", n.Dir, "--timeout", "10s")
	if r.code != ExitOK || !strings.Contains(r.stdout, "revoked node exec-x") || !strings.Contains(r.stdout, "NATS refuses 1 user(s)") {
		t.Fatalf("node revoke = %+v", r)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("NATS did not close the revoked executor's connection")
	}
	if again, err := nats.Connect(n.NATSURL(), append(co, nats.MaxReconnects(0))...); err == nil {
		again.Close()
		t.Fatal("the revoked executor connected again")
	} else if !errors.Is(err, nats.ErrAuthorization) && !errors.Is(err, nats.ErrAuthRevoked) {
		t.Logf("refused with: %v", err)
	}

	harness := bustest.Harness(t, bus.ConnConfig{URLs: []string{n.NATSURL()}}, root)
	if err := online(&harness.JS); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the revoked executor's next event refused", func() bool {
		return count(t, n.API, string(event.Rejected), string(event.RejectRevoked)) == 1
	})
	if got := count(t, n.API, "executor.online", "exec-x"); got != 1 {
		t.Errorf("%d executor.online events of exec-x in the ledger, want the one before the revocation", got)
	}

	// The revocation is on record, with the NATS user, and a second push
	// carries it again.
	var revs []api.Revocation
	if err := n.API.Call(ctx, api.MethodRevocationsList, struct{}{}, &revs); err != nil || len(revs) != 1 || revs[0].ID != "exec-x" || len(revs[0].NATSUsers) != 1 {
		t.Fatalf("revocations.list = %+v %v", revs, err)
	}
	if r := h.run("keys", "push-revocations", "--root", n.Dir); r.code != ExitOK || !strings.Contains(r.stdout, "1 revoked NATS users: "+natsUserOf(t, exec)) {
		t.Errorf("keys push-revocations = %+v", r)
	}
}

// TestRevokeNeedsAnAdministrator: an operator without the admin role may
// not revoke (agentctl says so before NATS would refuse the subject, as
// TestLedgerRefusalIsAnError shows it does), and nothing is recorded.
func TestRevokeNeedsAnAdministrator(t *testing.T) {
	h, n := nodeHarness(t)
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	op, err := trust.NewIdentity(root, "bob", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.creds = t.TempDir() + "/bob.creds"
	if err := natsauth.WriteOperatorCreds(h.creds, root, op); err != nil {
		t.Fatal(err)
	}
	r := h.run("node", "revoke", "test-node", "--reason", "no")
	if r.code != ExitError || !strings.Contains(r.stderr, "revoking needs role admin") {
		t.Fatalf("revoke by an operator = %+v", r)
	}
	if got := count(t, n.API, string(event.CredentialRevoked), ""); got != 0 {
		t.Errorf("%d revocations recorded", got)
	}
	if r := h.run("node", "revoke", "test-node"); r.code != ExitUsage || !strings.Contains(r.stderr, "--reason is required") {
		t.Errorf("revoke without a reason = %+v", r)
	}
}

// count is how many audit lines have type typ and mention what (in their
// node or data; "" matches all, for either).
func count(t *testing.T, c *api.Client, typ, what string) int {
	t.Helper()
	n := 0
	for l, err := range c.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if (typ == "" || l.Type == typ) && (what == "" || l.Node == what || strings.Contains(string(l.Data), what)) {
			n++
		}
	}
	return n
}

// TestViewerReadsButCannotWrite: a viewer's credentials (keys operator
// --role viewer) list runs and tail the audit of a real node, and cannot
// submit a goal or cancel a run: nothing reaches the ledger.
func TestViewerReadsButCannotWrite(t *testing.T) {
	h, n := nodeHarness(t)
	run := n.Submit(t, "one.yaml", onePlan)
	n.WaitRun(t, run, 30*time.Second)
	viewer := t.TempDir() + "/auditor.creds"
	if r := h.run("keys", "operator", "auditor", "--role", "viewer", "--root", n.Dir, "--out", viewer); r.code != ExitOK || !strings.Contains(r.stdout, "roles viewer") {
		t.Fatalf("keys operator --role viewer = %+v", r)
	}
	admin := h.creds
	h.creds = viewer
	if r := h.run("run", "list"); r.code != ExitOK || !strings.Contains(r.stdout, run[:8]) {
		t.Errorf("a viewer's run list = %+v", r)
	}
	if r := h.run("audit", "tail", "--run", run); r.code != ExitOK || !strings.Contains(r.stdout, "run.finished") {
		t.Errorf("a viewer's audit tail = %+v", r)
	}
	long := n.Submit(t, "long.yaml", "goal: long\nsteps:\n  - id: wait\n    run: sleep 30\n")
	poll.Eventually(t, 10*time.Second, "the long run running", func() bool {
		s, err := n.API.RunSummary(context.Background(), long)
		return err == nil && s.Status == "running"
	})
	for _, args := range [][]string{{"goal", "submit", "do something"}, {"run", "cancel", long}, {"memory", "put", "shared", "k", "v"}} {
		if r := h.run(args...); r.code != ExitError || !strings.Contains(r.stderr, "not an operator") {
			t.Errorf("a viewer's %v = %+v", args, r)
		}
	}
	if got := count(t, n.API, "", "auditor") + count(t, n.API, string(event.Rejected), ""); got != 0 {
		t.Errorf("the ledger holds %d entries by the viewer or refused", got)
	}
	h.creds = admin
	if r := h.run("run", "cancel", long); r.code != ExitOK {
		t.Errorf("the administrator's run cancel = %+v", r)
	}
}

// TestOperatorRevokeNeverSigned: an operator who only read — connected
// and queried, never signed an event — is unknown to the ledger's
// credentials index. operator revoke --root records the revocation but
// says loudly (an error, naming what to pass) that NATS still accepts
// them; run again with their creds file (--credential), it pushes the
// NATS user the file names, prints it, and NATS closes the operator's
// connection and refuses the next: no more queries. Without --root, a
// warning says the same.
func TestOperatorRevokeNeverSigned(t *testing.T) {
	h, n := nodeHarness(t)
	creds := t.TempDir() + "/op5.creds"
	if r := h.run("keys", "operator", "op5", "--root", n.Dir, "--out", creds); r.code != ExitOK {
		t.Fatalf("keys operator = %+v", r)
	}
	op5, _, err := trust.ReadCreds(creds)
	if err != nil {
		t.Fatal(err)
	}
	user, err := trust.NATSUserKey(op5.Key)
	if err != nil {
		t.Fatal(err)
	}
	opts, _, err := natsauth.CredsOptions(creds)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(n.NATSURL(), append(opts, nats.MaxReconnects(0), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	var revs []api.Revocation
	if err := api.NewClient(nc, 10*time.Second).Call(ctx, api.MethodRevocationsList, struct{}{}, &revs); err != nil {
		t.Fatalf("op5's query before the revocation: %v", err)
	}

	r := h.run("operator", "revoke", "op5", "--reason", "left")
	if r.code != ExitOK || !strings.Contains(r.stderr, "warning:") || !strings.Contains(r.stderr, "NATS still accepts it") || !strings.Contains(r.stderr, "--credential FILE") {
		t.Fatalf("operator revoke without --root of an operator who never signed = %+v, want a warning naming --credential", r)
	}
	r = h.run("operator", "revoke", "op5", "--reason", "left", "--root", n.Dir)
	if r.code != ExitError || !strings.Contains(r.stderr, "NATS still accepts it") || !strings.Contains(r.stderr, "--credential FILE") {
		t.Fatalf("operator revoke of an operator who never signed = %+v, want an error naming --credential", r)
	}
	if !strings.Contains(r.stdout, "revoked operator op5") {
		t.Errorf("stdout %q, want the ledger revocation reported", r.stdout)
	}
	if err := n.API.Call(ctx, api.MethodRevocationsList, struct{}{}, &revs); err != nil || len(revs) != 2 || len(revs[0].NATSUsers)+len(revs[1].NATSUsers) != 0 {
		t.Fatalf("revocations.list = %+v %v, want op5's two, without NATS users", revs, err)
	}
	if !nc.IsConnected() {
		t.Fatal("op5 disconnected without a push")
	}

	r = h.run("operator", "revoke", "op5", "--reason", "left", "--root", n.Dir, "--credential", creds)
	if r.code != ExitOK || !strings.Contains(r.stdout, "NATS refuses 1 user(s) of it and closed their connections: "+user) {
		t.Fatalf("operator revoke --credential = %+v, want %s pushed", r, user)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("NATS did not close the revoked operator's connection")
	}
	if again, err := nats.Connect(n.NATSURL(), append(opts, nats.MaxReconnects(0))...); err == nil {
		again.Close()
		t.Fatal("the revoked operator connected again (and could query)")
	}
	if r := h.run("operator", "revoke", "op5", "--reason", "x", "--credential", filepath.Join(n.Dir, trust.NodeCredFile)); r.code != ExitUsage || !strings.Contains(r.stderr, "nothing was revoked") {
		t.Errorf("--credential of another identity = %+v, want a usage error", r)
	}
}

// natsUserOf is the NATS user key of id.
func natsUserOf(t *testing.T, id *trust.Identity) string {
	t.Helper()
	u, err := trust.NATSUserKey(id.Key)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
