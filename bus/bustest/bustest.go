// Package bustest starts real NATS JetStream servers for tests: an embedded
// nats-server on a random loopback port with its store in t.TempDir(), shut
// down by t.Cleanup (Server, ServerIn), or a NATS cluster of them that a
// test can stop, start and restart server by server (Cluster). There is
// no mock of NATS anywhere in agentic's tests.
package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats-server/v2/server"
)

// Server starts an embedded JetStream server (sync_interval: always) for the
// test and returns it.
func Server(t testing.TB) *embedded.Server {
	t.Helper()
	return ServerIn(t, t.TempDir())
}

// ServerIn starts an embedded server storing under dir, so a test can stop it
// and start another on the same store.
func ServerIn(t testing.TB, dir string) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// An open server still takes an operator's NATS user JWT in CONNECT:
	// give it the control line agentd's servers have.
	raise := func(o *server.Options) error { o.MaxControlLine = natsauth.MaxControlLine; return nil }
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: "127.0.0.1:0", Auth: raise})
	if err != nil {
		t.Fatalf("bustest: start server: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// Connect opens an in-process connection to srv, creates the protocol's
// streams, and closes the connection at cleanup.
func Connect(t testing.TB, srv *embedded.Server) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := bus.Connect(ctx, bus.ConnConfig{Server: srv, Name: t.Name()})
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(c.Close)
	if err := bus.EnsureStreams(ctx, c.JS, bus.StreamConfig{Replicas: 1, StoreLimit: srv.MaxStore()}); err != nil {
		t.Fatalf("bustest: streams: %v", err)
	}
	return c
}

// Identities is a trust root with identities for tests.
type Identities struct {
	Root *trust.Root
}

// NewIdentities makes a fresh root.
func NewIdentities(t testing.TB) *Identities {
	t.Helper()
	r, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	return &Identities{Root: r}
}

// Node issues an identity with roles, valid for an hour.
func (ids *Identities) Node(t testing.TB, name string, roles ...string) *trust.Identity {
	t.Helper()
	kind := trust.KindNode
	for _, r := range roles {
		if r == "operator" {
			kind = trust.KindOperator
		}
	}
	id, err := trust.NewIdentity(ids.Root, name, kind, roles, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
