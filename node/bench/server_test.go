package bench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/nats-io/nats.go"
)

// logger is what the parts under measurement log to: errors only, on
// stderr, so that a failure is visible and the figures are not drowned.
func logger() *slog.Logger {
	var w io.Writer = os.Stderr
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelError}))
}

// server is an embedded nats-server exactly as the product starts it
// (embedded.Start: JetStream file storage, sync_interval: always) with
// an in-process client connection, as a node's own.
type server struct {
	srv  *embedded.Server
	conn *bus.Conn
	once sync.Once
}

// startServer starts a server storing under a fresh temporary directory,
// with the protocol's streams; it is stopped by stop or at cleanup.
func startServer(tb testing.TB) *server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: tb.TempDir(), ServerName: "bench"})
	if err != nil {
		tb.Fatalf("start embedded server: %v", err)
	}
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: srv, Name: "bench"})
	if err != nil {
		srv.Shutdown()
		tb.Fatalf("connect: %v", err)
	}
	s := &server{srv: srv, conn: conn}
	tb.Cleanup(s.stop)
	if err := bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{Replicas: 1}); err != nil {
		tb.Fatalf("streams: %v", err)
	}
	return s
}

// connect opens another in-process connection (its own JetStream
// options); it is closed at cleanup.
func (s *server) connect(tb testing.TB) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s.srv.NATS()), nats.Name("bench-client"))
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// stop closes the connection and shuts the server down; idempotent.
func (s *server) stop() {
	s.once.Do(func() {
		s.conn.Close()
		s.srv.Shutdown()
	})
}
