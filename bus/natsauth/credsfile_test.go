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
