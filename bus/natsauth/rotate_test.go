package natsauth_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
)

// connectIssued connects to cl's server as a node id issued by root with
// auth: the client, or the connection's error.
func (cl *cluster) connectIssued(auth *natsauth.Authority, root *trust.Root, id string) (*nats.Conn, error) {
	cl.t.Helper()
	ident, err := trust.NewIdentity(root, id, trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		cl.t.Fatal(err)
	}
	opts, err := auth.UserOptions(root, ident)
	if err != nil {
		cl.t.Fatal(err)
	}
	nc, err := nats.Connect(cl.url, append(opts, nats.MaxReconnects(0))...)
	if err == nil {
		cl.t.Cleanup(nc.Close)
	}
	return nc, err
}

// push sends auth's AGENTIC account JWT to cl's server.
func (cl *cluster) push(auth *natsauth.Authority) {
	cl.t.Helper()
	sysJWT, sysSeed, err := auth.SystemUserCreds(time.Minute)
	if err != nil {
		cl.t.Fatal(err)
	}
	sys, err := nats.Connect(cl.url, nats.UserJWTAndSeed(sysJWT, string(sysSeed)), nats.MaxReconnects(0))
	if err != nil {
		cl.t.Fatalf("system user connects: %v", err)
	}
	defer sys.Close()
	acc, err := auth.AccountJWT(nil)
	if err != nil {
		cl.t.Fatal(err)
	}
	if err := natsauth.PushAccount(ctxT(cl.t), sys, acc); err != nil {
		cl.t.Fatalf("push the account: %v", err)
	}
}

// TestRootRotationOnNATS: a rotated root keeps the NATS operator and
// account of the genesis; its users connect once the account lists its
// signing key (the overlap, both roots' users connected), and the
// genesis's users are cut off — connections closed, new ones refused —
// once the account no longer lists the genesis's (the cutover).
func TestRootRotationOnNATS(t *testing.T) {
	cl := newCluster(t)
	oldConn, err := cl.connectIssued(cl.auth, cl.root, "exec-old")
	if err != nil {
		t.Fatalf("a user of the genesis root: %v", err)
	}
	next, err := natsauth.RotateRoot(cl.root)
	if err != nil {
		t.Fatal(err)
	}
	nextAuth, err := natsauth.NewAuthority(next)
	if err != nil {
		t.Fatal(err)
	}
	if nextAuth.OperatorKey() != cl.auth.OperatorKey() || nextAuth.AccountKey() != cl.auth.AccountKey() || nextAuth.SystemAccountKey() != cl.auth.SystemAccountKey() {
		t.Fatal("the rotated root has another NATS operator or account")
	}
	// Before the account lists the new root's signing key, its users are
	// refused.
	if nc, err := cl.connectIssued(nextAuth, next, "exec-early"); err == nil {
		nc.Close()
		t.Fatal("a user of the new root connected before the account listed its signing key")
	}
	// The overlap: the account lists both roots' signing keys.
	cl.push(nextAuth)
	newConn, err := cl.connectIssued(nextAuth, next, "exec-new")
	if err != nil {
		t.Fatalf("a user of the new root during the overlap: %v", err)
	}
	if _, err := cl.connectIssued(cl.auth, cl.root, "exec-old2"); err != nil {
		t.Fatalf("a user of the genesis root during the overlap: %v", err)
	}
	if !oldConn.IsConnected() {
		t.Fatal("the overlap closed a user of the genesis root")
	}
	// The cutover: the genesis is retired.
	closed := make(chan struct{})
	oldConn.SetClosedHandler(func(*nats.Conn) { close(closed) })
	after, err := natsauth.NewAuthority(next.WithoutRoot(cl.root.KeyID()))
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Roots(); len(got) != 1 || got[0] != next.KeyID() {
		t.Fatalf("after the cutover the account lists the signing keys of %v, want only %s", got, next.KeyID())
	}
	cl.push(after)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("a user of the retired root is still connected")
	}
	if nc, err := cl.connectIssued(cl.auth, cl.root, "exec-old3"); err == nil {
		nc.Close()
		t.Fatal("a user of the retired root connected after the cutover")
	}
	if !newConn.IsConnected() {
		t.Fatal("the cutover closed a user of the new root")
	}
	if _, err := cl.connectIssued(after, next, "exec-new2"); err != nil {
		t.Fatalf("a user of the new root after the cutover: %v", err)
	}
}

// TestRotatedRootNeedsItsInheritedKeys: a rotated root's directory gives
// the genesis's NATS operator and account back, through its directory or
// its root.key file; without inherited.keys the authority is refused
// rather than made for another account.
func TestRotatedRootNeedsItsInheritedKeys(t *testing.T) {
	g, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	ga, err := natsauth.NewAuthority(g)
	if err != nil {
		t.Fatal(err)
	}
	next, err := natsauth.RotateRoot(g)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := trust.SaveRoot(dir, next); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, trust.RootKeyFile)} {
		r, err := trust.LoadIssuer(path)
		if err != nil {
			t.Fatal(err)
		}
		a, err := natsauth.NewAuthority(r)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if a.AccountKey() != ga.AccountKey() || a.OperatorKey() != ga.OperatorKey() {
			t.Fatalf("%s: another NATS operator or account than the genesis's", path)
		}
	}
	if err := os.Remove(filepath.Join(dir, trust.InheritedFile)); err != nil {
		t.Fatal(err)
	}
	r, err := trust.LoadIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := natsauth.NewAuthority(r); err == nil {
		t.Fatal("an authority was made for a rotated root without its inherited keys")
	}
}
