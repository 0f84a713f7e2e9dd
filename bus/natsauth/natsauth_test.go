package natsauth_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/agentic-dev/agentic/roles/executor"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

func newRoot(t *testing.T) *trust.Root {
	t.Helper()
	r, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestKeysDerivedFromRoot: the same root gives the same operator and
// accounts (nothing to store), another root others; a verify-only root
// cannot make them.
func TestKeysDerivedFromRoot(t *testing.T) {
	root := newRoot(t)
	a1, err := natsauth.NewAuthority(root)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := natsauth.NewAuthority(root)
	if a1.OperatorKey() != a2.OperatorKey() || a1.AccountKey() != a2.AccountKey() || a1.SystemAccountKey() != a2.SystemAccountKey() {
		t.Fatal("the same root derived different NATS keys")
	}
	if !nkeys.IsValidPublicOperatorKey(a1.OperatorKey()) || !nkeys.IsValidPublicAccountKey(a1.AccountKey()) {
		t.Fatalf("derived keys of the wrong kind: %s %s", a1.OperatorKey(), a1.AccountKey())
	}
	if a1.AccountKey() == a1.SystemAccountKey() {
		t.Fatal("the system account and the AGENTIC account share a key")
	}
	b, _ := natsauth.NewAuthority(newRoot(t))
	if b.OperatorKey() == a1.OperatorKey() {
		t.Fatal("two roots derived the same operator")
	}
	if _, err := natsauth.NewAuthority(&trust.Root{Public: root.Public}); err == nil {
		t.Fatal("a verify-only root made an authority")
	}

	id, err := trust.NewIdentity(root, "exec-b", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := natsauth.UserKey(id)
	k2, _ := natsauth.UserKey(id)
	p1, _ := k1.PublicKey()
	p2, _ := k2.PublicKey()
	if p1 != p2 || !nkeys.IsValidPublicUserKey(p1) {
		t.Fatalf("user key not derived deterministically: %s %s", p1, p2)
	}
	other, _ := trust.NewIdentity(root, "exec-b", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	k3, _ := natsauth.UserKey(other)
	if p3, _ := k3.PublicKey(); p3 == p1 {
		t.Fatal("two keys of the same name derived the same NATS user")
	}
}

func TestBundleVerify(t *testing.T) {
	a, _ := natsauth.NewAuthority(newRoot(t))
	b, err := a.Bundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.Verify(a.OperatorKey())
	if err != nil {
		t.Fatalf("verify a good bundle: %v", err)
	}
	if v.Account.Subject != a.AccountKey() || v.Operator.SystemAccount != a.SystemAccountKey() {
		t.Fatal("verified bundle names other keys")
	}
	other, _ := natsauth.NewAuthority(newRoot(t))
	ob, _ := other.Bundle(nil)
	if _, err := b.Verify(other.OperatorKey()); err == nil {
		t.Fatal("a bundle verified against another root's operator")
	}
	mixed := b
	mixed.Account = ob.Account
	if _, err := mixed.Verify(""); err == nil || !strings.Contains(err.Error(), "not by the operator") {
		t.Fatalf("an account signed by another operator: %v", err)
	}
	mixed = b
	mixed.SystemAccount = ob.SystemAccount
	if _, err := mixed.Verify(""); err == nil {
		t.Fatal("a foreign system account verified")
	}
	mixed = b
	mixed.Operator = "garbage"
	if _, err := mixed.Verify(""); err == nil {
		t.Fatal("a malformed operator JWT verified")
	}
}

func TestAccountRevocations(t *testing.T) {
	a, _ := natsauth.NewAuthority(newRoot(t))
	u, _ := nkeys.CreateUser()
	pub, _ := u.PublicKey()
	at := time.Now().Truncate(time.Second)
	s, err := a.AccountJWT(map[string]time.Time{pub: at})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := jwt.DecodeAccountClaims(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := ac.Revocations[pub]; got != at.Unix() {
		t.Fatalf("revocation of %s at %d, want %d", pub, got, at.Unix())
	}
	if _, err := a.AccountJWT(map[string]time.Time{"not-a-key": at}); err == nil {
		t.Fatal("a revocation of a malformed key was accepted")
	}
}

// allRoles are identities of every kind and role.
var allRoles = []struct {
	kind  string
	roles []string
}{
	{trust.KindNode, []string{event.RoleExecutor}},
	{trust.KindNode, []string{event.RoleOrchestrator}},
	{trust.KindNode, []string{event.RolePlanner}},
	{trust.KindNode, []string{event.RoleMemory}},
	{trust.KindNode, []string{event.RoleUI}},
	{trust.KindNode, event.NodeRoles},
	{trust.KindOperator, []string{natsauth.RoleViewer}},
	{trust.KindOperator, []string{trust.OperatorRole}},
	{trust.KindOperator, []string{natsauth.RoleAdmin}},
}

// TestPermissionsLeastPrivilege checks the table: no wholesale grant, the
// stream API's destructive operations for admin alone, decisions for
// orchestrators alone, and every user JWT fits the control line.
func TestPermissionsLeastPrivilege(t *testing.T) {
	a, _ := natsauth.NewAuthority(newRoot(t))
	destructive := []string{"STREAM.DELETE", "STREAM.PURGE", "STREAM.UPDATE", "STREAM.MSG.DELETE", "STREAM.RESTORE"}
	for _, c := range allRoles {
		p, err := natsauth.Permissions(c.kind, "x1", c.roles)
		if err != nil {
			t.Fatalf("%s %v: %v", c.kind, c.roles, err)
		}
		admin := slices.Contains(c.roles, natsauth.RoleAdmin)
		for _, s := range append(slices.Clone(p.Pub.Allow), p.Sub.Allow...) {
			switch s {
			case ">", "$JS.>", "$JS.API.>", "$KV.>", "agentic.>", "agentic.ev.>", "_INBOX.>", "$SYS.>":
				t.Errorf("%s %v: wholesale grant %s", c.kind, c.roles, s)
			}
			for _, d := range destructive {
				if strings.HasPrefix(s, "$JS.API."+d) && !admin {
					t.Errorf("%s %v: %s granted to a non-admin", c.kind, c.roles, s)
				}
			}
			if strings.HasPrefix(s, "$KV.agentic_leader") && !slices.Contains(c.roles, event.RoleOrchestrator) {
				t.Errorf("%s %v: leader bucket write granted to a non-orchestrator", c.kind, c.roles)
			}
			if strings.HasPrefix(s, "_INBOX") && s != natsauth.InboxPrefix(c.kind, "x1")+".>" {
				t.Errorf("%s %v: inbox %s is not its own", c.kind, c.roles, s)
			}
		}
		decision := event.Subject(event.TaskAssigned, "*")
		if slices.Contains(p.Pub.Allow, decision) != slices.Contains(c.roles, event.RoleOrchestrator) {
			t.Errorf("%s %v: %s granted: %v", c.kind, c.roles, decision, slices.Contains(p.Pub.Allow, decision))
		}
		if admin && !slices.Contains(p.Pub.Allow, "$JS.API.STREAM.DELETE.*") {
			t.Errorf("admin cannot delete a stream")
		}
		// The user JWT of the identity fits a server's control line.
		u, _ := nkeys.CreateUser()
		pub, _ := u.PublicKey()
		s, err := a.UserJWT(natsauth.Identity{Kind: c.kind, ID: "a-node-name-of-32-characters-xxx", Roles: c.roles, UserKey: pub}, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(s)+512 > natsauth.MaxControlLine {
			t.Errorf("%s %v: user JWT of %d bytes leaves too little of the %d-byte control line", c.kind, c.roles, len(s), natsauth.MaxControlLine)
		}
	}
}

func TestPermissionsRefuseBadInput(t *testing.T) {
	for _, c := range []struct {
		kind, id string
		roles    []string
	}{
		{trust.KindNode, "a.b", []string{event.RoleExecutor}},   // a dot would open other subjects
		{trust.KindNode, "*", []string{event.RoleExecutor}},     // a wildcard id
		{trust.KindNode, "n", nil},                              // no roles
		{trust.KindNode, "n", []string{natsauth.RoleAdmin}},     // an operator role on a node
		{trust.KindOperator, "o", []string{event.RoleExecutor}}, // a node role on an operator
		{"robot", "r", []string{event.RoleExecutor}},            // unknown kind
	} {
		if _, err := natsauth.Permissions(c.kind, c.id, c.roles); err == nil {
			t.Errorf("Permissions(%q, %q, %v) accepted", c.kind, c.id, c.roles)
		}
	}
}

// TestNamesMatchTheProtocol pins the names this package repeats: the
// executor's durable and every query method, classified read or admin.
func TestNamesMatchTheProtocol(t *testing.T) {
	if got, want := natsauth.ExecutorConsumer("exec-b"), executor.ConsumerName("exec-b"); got != want {
		t.Fatalf("executor consumer %q, the executor uses %q", got, want)
	}
	methods := []string{
		api.MethodRunsList, api.MethodRunsGet, api.MethodRunsSteps, api.MethodAudit,
		api.MethodLedgerVerify, api.MethodLedgerExport, api.MethodLedgerMessage, api.MethodLedgerHead,
		api.MethodMemoryGet, api.MethodMemoryList, api.MethodNodeInfo, api.MethodNodesList,
		api.MethodAlarmsList, api.MethodNodeBackup, settings.Method,
	}
	for _, m := range methods {
		if !slices.Contains(natsauth.ReadMethods, m) && !slices.Contains(natsauth.AdminMethods, m) {
			t.Errorf("query method %s is neither a read nor an admin method", m)
		}
	}
	if !slices.Contains(natsauth.AdminMethods, api.MethodNodeBackup) {
		t.Error("node.backup must be admin only")
	}
	if api.SubjectPrefix != "agentic.api." {
		t.Errorf("api prefix %q", api.SubjectPrefix)
	}
}
