package natsauth_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
)

// TestUsersOfNeverSigned: an operator who never signed an event — the
// ledger knows no NATS user of theirs — is revoked by their creds file,
// an API token they made, or a node's node.cred and node.nats.jwt: each
// names the identity's NATS user, and pushing the account that revokes it
// to a real server refuses the user's next connection. A file of another
// identity, or with no credential at all, is refused.
func TestUsersOfNeverSigned(t *testing.T) {
	cl := newCluster(t)
	dir := t.TempDir()
	op5, err := trust.NewIdentity(cl.root, "op5", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	credsFile := filepath.Join(dir, "op5.creds")
	if err := cl.auth.WriteCreds(credsFile, cl.root, op5); err != nil {
		t.Fatal(err)
	}
	user, err := trust.NATSUserKey(op5.Key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok, err := trust.APIToken(op5, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"creds file": credsFile,
		"API token":  write("token", tok+"\n"),
		"credential": write("op5.cred", op5.Credential+"\n"),
	} {
		got, err := natsauth.UsersOf(path, trust.KindOperator, "op5")
		if err != nil || !slices.Equal(got, []string{user}) {
			t.Errorf("%s: %v %v, want [%s]", name, got, err, user)
		}
	}
	node, err := trust.NewIdentity(cl.root, "exec-b", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	nodeDir := t.TempDir()
	if err := cl.auth.IssueNode(nodeDir, cl.root, node); err != nil {
		t.Fatal(err)
	}
	if err := trust.SaveIdentity(nodeDir, node); err != nil {
		t.Fatal(err)
	}
	nodeUser, _ := trust.NATSUserKey(node.Key)
	for _, f := range []string{trust.NodeCredFile, natsauth.UserJWTFile} {
		if got, err := natsauth.UsersOf(filepath.Join(nodeDir, f), trust.KindNode, "exec-b"); err != nil || !slices.Equal(got, []string{nodeUser}) {
			t.Errorf("%s: %v %v, want [%s]", f, got, err, nodeUser)
		}
	}
	if _, err := natsauth.UsersOf(credsFile, trust.KindOperator, "op6"); err == nil || !strings.Contains(err.Error(), `operator "op5", not operator "op6"`) {
		t.Errorf("op5's file for op6: %v, want refused", err)
	}
	if _, err := natsauth.UsersOf(filepath.Join(nodeDir, trust.NodeCredFile), trust.KindOperator, "exec-b"); err == nil {
		t.Error("a node's credential revoked an operator of its name")
	}
	if _, err := natsauth.UsersOf(write("notes", "hello\n"), trust.KindOperator, "op5"); !errors.Is(err, natsauth.ErrNoUserFound) {
		t.Errorf("a file without a credential: %v, want ErrNoUserFound", err)
	}

	// op5 connects (a viewer of queries), never signs; revoked by the
	// key its creds file names, NATS refuses it.
	opts, _, err := natsauth.CredsOptions(credsFile)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatalf("op5 connects before its revocation: %v", err)
	}
	defer nc.Close()
	users, err := natsauth.UsersOf(credsFile, trust.KindOperator, "op5")
	if err != nil {
		t.Fatal(err)
	}
	revoked := map[string]time.Time{}
	for _, u := range users {
		revoked[u] = time.Now().Add(time.Second)
	}
	acc, err := cl.auth.AccountJWT(revoked)
	if err != nil {
		t.Fatal(err)
	}
	sysJWT, sysSeed, err := cl.auth.SystemUserCreds(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := nats.Connect(cl.url, nats.UserJWTAndSeed(sysJWT, string(sysSeed)), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if err := natsauth.PushAccount(ctxT(t), sys, acc); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("op5's connection is still open")
	}
	if again, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0))...); err == nil {
		again.Close()
		t.Fatal("op5 connected again after its revocation")
	}
}
