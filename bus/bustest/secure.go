package bustest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Auth is the server option that puts a test server in operator mode for
// root, as agentd's embedded server is (embedded.OperatorOptions): only
// identities root issued connect, each with its role's permissions.
// Account JWTs are kept under dir.
func Auth(t testing.TB, root *trust.Root, dir string) func(*server.Options) error {
	t.Helper()
	a, err := natsauth.NewAuthority(root)
	if err != nil {
		t.Fatalf("bustest: NATS authority: %v", err)
	}
	b, err := a.Bundle(nil)
	if err != nil {
		t.Fatalf("bustest: NATS bundle: %v", err)
	}
	return func(o *server.Options) error { return embedded.OperatorOptions(o, b, filepath.Join(dir, "jwt")) }
}

// SecureServer starts an embedded JetStream server in operator mode for
// root (Auth): the server nodes of root's cluster connect to in a test.
func SecureServer(t testing.TB, root *trust.Root) *embedded.Server {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: "127.0.0.1:0", Auth: Auth(t, root, dir)})
	if err != nil {
		t.Fatalf("bustest: start server: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// SecureCluster is Cluster in operator mode for root (Auth on every
// server); its Connect connects as root's administrator.
func SecureCluster(t testing.TB, n int, root *trust.Root) *NATSCluster {
	t.Helper()
	return newCluster(t, n, root)
}

// ConnectAs opens an in-process connection to srv as id (issued by root,
// which must hold its private key), with id's NATS user and inbox, and
// closes it at cleanup.
func ConnectAs(t testing.TB, srv *embedded.Server, root *trust.Root, id *trust.Identity) *bus.Conn {
	t.Helper()
	return connectAs(t, bus.ConnConfig{Server: srv, Name: t.Name()}, root, id)
}

func connectAs(t testing.TB, cc bus.ConnConfig, root *trust.Root, id *trust.Identity) *bus.Conn {
	t.Helper()
	a, err := natsauth.NewAuthority(root)
	if err != nil {
		t.Fatalf("bustest: NATS authority: %v", err)
	}
	if cc.Identity, err = a.UserOptions(root, id); err != nil {
		t.Fatalf("bustest: NATS user of %s: %v", id.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, cc)
	if err != nil {
		t.Fatalf("bustest: connect as %s: %v", id.ID, err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// Harness opens a connection as the test harness of root's cluster (cc
// says where; closed at cleanup): a NATS user of the AGENTIC account
// allowed every subject of it, the equivalent in operator mode of the
// anonymous access of an open server. Tests use it to write histories
// signed by many identities and to inspect streams; no agentic identity
// is given these rights (natsauth.Permissions).
func Harness(t testing.TB, cc bus.ConnConfig, root *trust.Root) *bus.Conn {
	t.Helper()
	cc.Identity = HarnessOptions(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, cc)
	if err != nil {
		t.Fatalf("bustest: connect as the harness: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// HarnessOptions are the nats.go options of the test harness's user
// (Harness).
func HarnessOptions(t testing.TB, root *trust.Root) []nats.Option {
	t.Helper()
	a, err := natsauth.NewAuthority(root)
	if err != nil {
		t.Fatalf("bustest: NATS authority: %v", err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	var perms jwt.Permissions
	perms.Pub.Allow.Add(">")
	perms.Sub.Allow.Add(">")
	j, err := a.CustomUserJWT("test-harness", pub, perms, time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatalf("bustest: harness user: %v", err)
	}
	seed, _ := kp.Seed()
	return []nats.Option{nats.UserJWTAndSeed(j, string(seed))}
}

// ConnectHarness opens an in-process connection to srv as the test
// harness (Harness) and creates the protocol's streams.
func ConnectHarness(t testing.TB, srv *embedded.Server, root *trust.Root) *bus.Conn {
	t.Helper()
	c := Harness(t, bus.ConnConfig{Server: srv, Name: t.Name()}, root)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := bus.EnsureStreams(ctx, c.JS, bus.StreamConfig{Replicas: 1, StoreLimit: srv.MaxStore()}); err != nil {
		t.Fatalf("bustest: streams: %v", err)
	}
	return c
}

// Admin is an administrator's identity issued by root (roles operator and
// admin), valid for an hour.
func Admin(t testing.TB, root *trust.Root) *trust.Identity {
	t.Helper()
	id, err := trust.NewIdentity(root, "test-admin", trust.KindOperator, trust.DefaultOperatorRoles, time.Hour)
	if err != nil {
		t.Fatalf("bustest: admin identity: %v", err)
	}
	return id
}
