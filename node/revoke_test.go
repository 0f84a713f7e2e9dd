package node_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publishAs publishes d signed by id over a NATS connection of id's own
// NATS user (the subjects its roles may publish on).
func publishAs(t *testing.T, n *nodetest.Node, root *trust.Root, id *trust.Identity, d event.Draft) {
	t.Helper()
	path := filepath.Join(t.TempDir(), id.ID+".creds")
	if err := natsauth.WriteOperatorCreds(path, root, id); err != nil {
		t.Fatal(err)
	}
	opts, _, err := natsauth.CredsOptions(path)
	if err != nil {
		t.Fatal(err)
	}
	publishVia(t, n, opts, id, d)
}

// publishVia publishes d signed by id over a connection made with opts.
func publishVia(t *testing.T, n *nodetest.Node, opts []nats.Option, id *trust.Identity, d event.Draft) {
	t.Helper()
	nc, err := nats.Connect(n.NATSURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, js, id, d); err != nil {
		t.Fatal(err)
	}
}

// waitLine polls node's ledger (through c) until an audit line matches.
func waitLine(t *testing.T, c *api.Client, node, what string, match func(api.AuditLine) bool) api.AuditLine {
	t.Helper()
	var found api.AuditLine
	poll.Eventually(t, 30*time.Second, what+" in "+node+"'s ledger", func() bool {
		for l, err := range c.At(node).AuditLines(context.Background(), api.AuditRequest{}) {
			if err != nil {
				return false
			}
			if match(l) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// startedBy matches the task.started of step signed by signer.
func startedBy(signer, step string) func(api.AuditLine) bool {
	return func(l api.AuditLine) bool {
		var d event.TaskStartedData
		return l.Type == string(event.TaskStarted) && l.Node == signer && json.Unmarshal(l.Data, &d) == nil && d.Step == step
	}
}

// refused matches the event.rejected of code for a message signer signed
// claiming type typ.
func refused(code event.RejectCode, signer string, typ event.Type) func(api.AuditLine) bool {
	return func(l api.AuditLine) bool {
		var d event.RejectedData
		return l.Type == string(event.Rejected) && json.Unmarshal(l.Data, &d) == nil &&
			d.Code == code && d.Signer == signer && d.ClaimedType == string(typ)
	}
}

// An administrator's credential.revoked makes every ledger node refuse what
// the revoked credential signs from then on (credential_revoked), keeping
// what it signed before; an operator without the admin role cannot
// revoke; the identity enrolled again signs again. Two ledger nodes agree,
// a restart keeps the revocation, and a ledger node that copies its ledger
// from a peer refuses the same.
func TestRevokedCredentialRefusedByLedgerNodes(t *testing.T) {
	ctx := context.Background()
	cfgA := nodetest.Config(t.TempDir())
	a := nodetest.Start(t, cfgA)
	root, err := trust.LoadRoot(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := trust.NewIdentity(root, "rv-exec", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clerk, err := trust.NewIdentity(root, "clerk", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.Operator.Roles, event.RoleAdmin) {
		t.Fatalf("the node's operator has roles %v, want an administrator", a.Operator.Roles)
	}
	cred, err := trust.ReadCredential(exec.Credential)
	if err != nil {
		t.Fatal(err)
	}
	natsUser, err := trust.NATSUserKey(exec.Key)
	if err != nil {
		t.Fatal(err)
	}
	run := event.NewID()
	start := func(id *trust.Identity, step string) event.Draft {
		return event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: step, Attempt: 1, Node: id.ID})
	}
	revoke := func() event.Draft {
		return event.MustDraft(event.CredentialRevoked, "", event.CredentialRevokedData{
			Kind: trust.KindNode, ID: exec.ID, Before: cred.Issued, NATSUsers: []string{natsUser}, Reason: "key lost"})
	}

	publishAs(t, a, root, exec, start(exec, "s1"))
	waitLine(t, a.API, "test-node", "rv-exec's first event", startedBy("rv-exec", "s1"))
	// The revocations travel through the test harness's connection: NATS
	// refuses the clerk's own this subject, and what matters here is what
	// the ledger makes of a message that reached the stream.
	harness := bustest.HarnessOptions(t, root)
	publishVia(t, a, harness, clerk, revoke())
	waitLine(t, a.API, "test-node", "the clerk's revocation refused", refused(event.RejectRoleNotAllowed, "clerk", event.CredentialRevoked))
	if revs, err := a.API.Revocations(ctx); err != nil || len(revs) != 0 {
		t.Fatalf("revocations after a non-administrator's: %+v, %v; want none", revs, err)
	}
	publishVia(t, a, harness, a.Operator, revoke())
	var revs []api.Revocation
	if werr := poll.Wait(30*time.Second, func() bool {
		revs, err = a.API.Revocations(ctx)
		return err == nil && len(revs) == 1
	}); werr != nil {
		for l, err := range a.API.AuditLines(ctx, api.AuditRequest{}) {
			if err == nil && l.Type == string(event.Rejected) {
				t.Logf("%d %s %s", l.Seq, l.Type, l.Data)
			}
		}
		t.Fatalf("%v waiting for the revocation: %+v, %v", werr, revs, err)
	}
	if r := revs[0]; r.Kind != trust.KindNode || r.ID != exec.ID || !r.Before.Equal(cred.Issued) || r.By != a.Operator.ID ||
		r.Seq == 0 || r.StreamSeq == 0 || r.Event == "" || !reflect.DeepEqual(r.NATSUsers, []string{natsUser}) || r.Reason != "key lost" {
		t.Fatalf("revocation %+v", r)
	}
	publishAs(t, a, root, exec, start(exec, "s2"))
	waitLine(t, a.API, "test-node", "rv-exec's event refused", refused(event.RejectRevoked, "rv-exec", event.TaskStarted))
	waitLine(t, a.API, "test-node", "rv-exec's first event, kept", startedBy("rv-exec", "s1"))

	// Enrolled again, in a later second than the revocation's Before.
	poll.Eventually(t, 3*time.Second, "the clock to pass the revoked credential's second", func() bool {
		return time.Now().Truncate(time.Second).After(cred.Issued)
	})
	exec2, err := trust.NewIdentity(root, "rv-exec", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	publishAs(t, a, root, exec2, start(exec2, "s3"))
	waitLine(t, a.API, "test-node", "the enrolled-again executor's event", startedBy("rv-exec", "s3"))
	creds, err := a.API.Credentials(ctx, trust.KindNode, "rv-exec")
	if err != nil || len(creds) != 2 {
		t.Fatalf("credentials of rv-exec: %+v, %v; want two", creds, err)
	}
	if c := creds[0]; c.NATSUser != natsUser || c.Key != trust.Fingerprint(cred.PublicKey) || !c.Issued.Equal(cred.Issued) || c.FirstSeq == 0 {
		t.Errorf("first credential of rv-exec: %+v, want NATS user %s", c, natsUser)
	}
	if _, err := a.API.Credentials(ctx, "account", "rv-exec"); err == nil {
		t.Error("credentials.list of kind account answered")
	}

	// A second ledger node folds the same stream to the same records.
	b := nodetest.Start(t, nodetest.PeerConfig(t, a.NATSURL(), root, "rv-b"))
	waitSameHead(t, a.API, "test-node", "rv-b")
	sameLedgerViews(t, a.API, "test-node", "rv-b")
	b.Stop(t)

	// A restart keeps the revocation.
	a.Stop(t)
	a = nodetest.Start(t, cfgA)
	if got, err := a.API.Revocations(ctx); err != nil || !reflect.DeepEqual(got, revs) {
		t.Fatalf("revocations after a restart: %+v, %v; want %+v", got, err, revs)
	}
	publishAs(t, a, root, exec, start(exec, "s4"))
	publishAs(t, a, root, exec2, start(exec2, "s5"))
	// s5 follows s4 in the stream: once it is folded, so is s4.
	waitLine(t, a.API, "test-node", "the enrolled-again executor's event after a restart", startedBy("rv-exec", "s5"))
	if n := countLines(t, a.API, "test-node", refused(event.RejectRevoked, "rv-exec", event.TaskStarted)); n != 2 {
		t.Fatalf("%d of rv-exec's messages refused as revoked after a restart, want 2 (s2 and s4)", n)
	}

	// A ledger folded again from zero (the ledger moved aside, the stream
	// holds the whole history) refuses the same.
	head, err := a.API.LedgerHead(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.Stop(t)
	if moved, err := node.RebuildLedger(cfgA.Data, time.Now()); err != nil || moved == "" {
		t.Fatalf("rebuild ledger: %q, %v", moved, err)
	}
	a = nodetest.Start(t, cfgA)
	poll.Eventually(t, 30*time.Second, "the ledger folded again up to its old head", func() bool {
		h, err := a.API.LedgerHead(ctx, head.Seq)
		return err == nil && h.Seq >= head.Seq && h.AtHash == head.Hash
	})
	if got, err := a.API.Revocations(ctx); err != nil || !reflect.DeepEqual(got, revs) {
		t.Fatalf("revocations after a fold from zero: %+v, %v; want %+v", got, err, revs)
	}
	if n := countLines(t, a.API, "test-node", refused(event.RejectRevoked, "rv-exec", event.TaskStarted)); n != 2 {
		t.Fatalf("%d of rv-exec's messages refused as revoked after a fold from zero, want 2", n)
	}

	// A ledger node that copies its ledger from a peer (the stream lost
	// the history) refuses the same.
	trimStream(t, a.JS, 3)
	cfgC := nodetest.PeerConfig(t, a.NATSURL(), root, "rv-late")
	cfgC.Ledger.BootstrapTimeout = 20 * time.Second
	nodetest.Start(t, cfgC)
	waitSameHead(t, a.API, "test-node", "rv-late")
	publishAs(t, a, root, exec, start(exec, "s6"))
	publishAs(t, a, root, exec2, start(exec2, "s7"))
	waitLine(t, a.API, "rv-late", "the enrolled-again executor's event on the copy", startedBy("rv-exec", "s7"))
	waitSameHead(t, a.API, "test-node", "rv-late")
	sameLedgerViews(t, a.API, "test-node", "rv-late")
	if n := countLines(t, a.API, "rv-late", refused(event.RejectRevoked, "rv-exec", event.TaskStarted)); n != 3 {
		t.Fatalf("%d of rv-exec's messages refused as revoked in the copy, want 3 (s2, s4, s6)", n)
	}
	for _, step := range []string{"s2", "s4", "s6"} {
		if n := countLines(t, a.API, "rv-late", startedBy("rv-exec", step)); n != 0 {
			t.Errorf("the copy accepted rv-exec's %s", step)
		}
	}
}

// countLines counts the audit lines of node's ledger that match.
func countLines(t *testing.T, c *api.Client, node string, match func(api.AuditLine) bool) int {
	t.Helper()
	n := 0
	for l, err := range c.At(node).AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if match(l) {
			n++
		}
	}
	return n
}

// sameLedgerViews fails t unless nodes x and y answer the same
// revocations and credentials of rv-exec.
func sameLedgerViews(t *testing.T, c *api.Client, x, y string) {
	t.Helper()
	ctx := context.Background()
	rx, errX := c.At(x).Revocations(ctx)
	ry, errY := c.At(y).Revocations(ctx)
	if errX != nil || errY != nil || len(rx) == 0 || !reflect.DeepEqual(rx, ry) {
		t.Errorf("revocations: %s %+v (%v), %s %+v (%v)", x, rx, errX, y, ry, errY)
	}
	cx, errX := c.At(x).Credentials(ctx, trust.KindNode, "rv-exec")
	cy, errY := c.At(y).Credentials(ctx, trust.KindNode, "rv-exec")
	if errX != nil || errY != nil || len(cx) != 2 || !reflect.DeepEqual(cx, cy) {
		t.Errorf("credentials of rv-exec: %s %+v (%v), %s %+v (%v)", x, cx, errX, y, cy, errY)
	}
}
