package bustest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"
	"github.com/agentic-dev/agentic/internal/freeport"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats-server/v2/server"
)

// ClusterName is the NATS cluster name of the servers Cluster starts.
const ClusterName = "agentic-test"

// NATSCluster is a NATS cluster of embedded JetStream servers on loopback,
// each storing in its own t.TempDir(), all shut down at cleanup. Server i
// keeps its name, store and ports across Stop and Start, so a test can
// restart a server as an operator would and clients find it again.
//
// Mind the CPU: each server is a full nats-server with a Raft log per
// replicated stream. Keep cluster tests few and short.
type NATSCluster struct {
	t       testing.TB
	root    *trust.Root // operator mode for this root (SecureCluster); nil: open
	cfgs    []embedded.Config
	servers []*embedded.Server
}

// Cluster starts n clustered servers named s1…sn (sync_interval: always,
// every route listed on every server, as deploy/nats ships them) and waits
// until JetStream is healthy on each.
func Cluster(t testing.TB, n int) *NATSCluster {
	t.Helper()
	return newCluster(t, n, nil)
}

func newCluster(t testing.TB, n int, root *trust.Root) *NATSCluster {
	t.Helper()
	c := &NATSCluster{t: t, root: root, cfgs: make([]embedded.Config, n), servers: make([]*embedded.Server, n)}
	routes := make([]string, n)
	for i := range n {
		route := freeport.Addr(t)
		routes[i] = "nats://" + route
		dir := t.TempDir()
		c.cfgs[i] = embedded.Config{
			StoreDir:      filepath.Join(dir, "nats"),
			Listen:        freeport.Addr(t),
			ServerName:    fmt.Sprintf("s%d", i+1),
			ClusterListen: route,
			ClusterName:   ClusterName,
		}
		if root != nil {
			c.cfgs[i].Auth = Auth(t, root, dir)
		}
	}
	for i := range c.cfgs {
		c.cfgs[i].Routes = routes
	}
	t.Cleanup(func() {
		for i := range c.servers {
			c.Stop(i)
		}
	})
	// A clustered server becomes ready for connections before the others
	// are up, so they can start one after the other.
	for i := range n {
		c.Start(i)
	}
	c.WaitHealthy()
	return c
}

// Len is the number of servers (running or not).
func (c *NATSCluster) Len() int { return len(c.cfgs) }

// Server returns server i, or nil while it is stopped.
func (c *NATSCluster) Server(i int) *embedded.Server { return c.servers[i] }

// Name is server i's name.
func (c *NATSCluster) Name(i int) string { return c.cfgs[i].ServerName }

// Index is the index of the server named name, -1 if none.
func (c *NATSCluster) Index(name string) int {
	for i, cfg := range c.cfgs {
		if cfg.ServerName == name {
			return i
		}
	}
	return -1
}

// URL is server i's client URL (the same across restarts).
func (c *NATSCluster) URL(i int) string { return "nats://" + c.cfgs[i].Listen }

// URLs are every server's client URL, for a client that must survive the
// loss of any one server.
func (c *NATSCluster) URLs() []string {
	out := make([]string, len(c.cfgs))
	for i := range c.cfgs {
		out[i] = c.URL(i)
	}
	return out
}

// Routes are the cluster (route) URLs of every server.
func (c *NATSCluster) Routes() []string { return c.cfgs[0].Routes }

// Stop shuts server i down (a no-op when it is stopped).
func (c *NATSCluster) Stop(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		c.servers[i] = nil
	}
}

// Start starts server i again on its store and ports (a no-op when it
// runs). It does not wait for JetStream: see WaitHealthy.
func (c *NATSCluster) Start(i int) {
	c.t.Helper()
	if c.servers[i] != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := embedded.Start(ctx, c.cfgs[i])
	if err != nil {
		c.t.Fatalf("bustest: start server %s: %v", c.cfgs[i].ServerName, err)
	}
	c.servers[i] = s
}

// Restart stops server i and starts it again, then waits until every
// running server's JetStream is healthy (the restarted one caught up).
func (c *NATSCluster) Restart(i int) {
	c.t.Helper()
	c.Stop(i)
	c.Start(i)
	c.WaitHealthy()
}

// WaitHealthy polls until every running server reports JetStream healthy:
// a meta leader is known and the server's streams and consumers are
// current.
func (c *NATSCluster) WaitHealthy() {
	c.t.Helper()
	var last string
	err := poll.Wait(60*time.Second, func() bool {
		for _, s := range c.servers {
			if s == nil {
				continue
			}
			if h := s.NATS().Healthz(&server.HealthzOptions{}); h.Status != "ok" {
				last = fmt.Sprintf("%s: %s %s", s.Name(), h.Status, h.Error)
				return false
			}
		}
		return true
	})
	if err != nil {
		c.t.Fatalf("bustest: cluster not healthy: %v (last: %s)", err, last)
	}
}

// Connect opens a TCP connection to every server (it fails over to another
// when the one it is on stops; as the test harness on a SecureCluster), creates the protocol's streams and the
// leader bucket with the default settings and three replicas (fewer on a
// smaller cluster), and closes the connection at cleanup.
func (c *NATSCluster) Connect(t testing.TB) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var conn *bus.Conn
	if c.root != nil {
		conn = Harness(t, bus.ConnConfig{URLs: c.URLs(), Name: t.Name()}, c.root)
	} else {
		var err error
		conn, err = bus.Connect(ctx, bus.ConnConfig{URLs: c.URLs(), Name: t.Name()})
		if err != nil {
			t.Fatalf("bustest: connect: %v", err)
		}
		t.Cleanup(conn.Close)
	}
	replicas := min(bus.ClusterReplicas, c.Len())
	if err := bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{Replicas: replicas}); err != nil {
		t.Fatalf("bustest: streams: %v", err)
	}
	return conn
}
