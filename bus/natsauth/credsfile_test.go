package natsauth_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
)

// TestCredsOptionsReadTheFileAtEachConnection: the options CredsOptions
// gives present the creds file as it is at each connection — a file
// replaced by another operator's is that operator's at the next connection
// — and a file that no longer holds a user fails the connection, saying
// which file.
func TestCredsOptionsReadTheFileAtEachConnection(t *testing.T) {
	cl := newCluster(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "op.creds")
	write := func(name string) *trust.Identity {
		id, err := trust.NewIdentity(cl.root, name, trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.auth.WriteCreds(path, cl.root, id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	write("op-a")
	opts, u, err := natsauth.CredsOptions(path)
	if err != nil || u.ID != "op-a" {
		t.Fatalf("CredsOptions: %v, user %+v", err, u)
	}
	connect := func(who string) *nats.Conn {
		t.Helper()
		nc, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0))...)
		if err != nil {
			t.Fatalf("%s connects: %v", who, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	connect("op-a")
	connect("op-a again") // the same file, read again
	write("op-b")
	want, err := natsauth.ReadCreds(path)
	if err != nil {
		t.Fatal(err)
	}
	nc := connect("op-b")
	if j, err := nc.Opts.UserJWT(); err != nil || j != want.JWT {
		t.Fatalf("after the file was replaced the options present another JWT (%v), want op-b's", err)
	}
	if err := os.WriteFile(path, []byte("not a creds file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0))...); err == nil {
		t.Fatal("a connection with a creds file holding no user succeeded")
	}
}

// TestCredsOptionsFirstConnectionReadsNothing: the first connection
// presents the file as CredsOptions read it, without reading it again (a
// CLI connects at once: one read of the file per invocation), and signs
// the nonce with the key of the JWT it presented; the next connection
// reads the file again.
func TestCredsOptionsFirstConnectionReadsNothing(t *testing.T) {
	cl := newCluster(t)
	path := filepath.Join(t.TempDir(), "op.creds")
	id, err := trust.NewIdentity(cl.root, "op-a", trust.KindOperator, []string{trust.OperatorRole}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.auth.WriteCreds(path, cl.root, id); err != nil {
		t.Fatal(err)
	}
	opts, _, err := natsauth.CredsOptions(path)
	if err != nil {
		t.Fatal(err)
	}
	// Gone before the first connection: a read would fail it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0))...)
	if err != nil {
		t.Fatalf("the first connection read the file again: %v", err)
	}
	nc.Close()
	if _, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0))...); err == nil {
		t.Fatal("the second connection presented a file that no longer exists")
	}
}
