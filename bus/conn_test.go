package bus_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"
	"github.com/agentic-dev/agentic/internal/freeport"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/nats-io/nats-server/v2/server"
)

// countPrefix is how many messages so far start with prefix.
func countPrefix(logs *logrec.Recorder, prefix string) int {
	return logs.Count(func(r logrec.Record) bool { return strings.HasPrefix(r.Message, prefix) })
}

func startAt(t *testing.T, dir, addr string) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestConnectWaitsForTheServer: a node started before its NATS server
// keeps trying (and says so) until the server is there.
func TestConnectWaitsForTheServer(t *testing.T) {
	addr := freeport.Addr(t)
	logs := &logrec.Recorder{}
	type result struct {
		c   *bus.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{"nats://" + addr}, Name: t.Name(), Logger: slog.New(logs)})
		done <- result{c, err}
	}()
	poll.Eventually(t, 10*time.Second, "a failed attempt to be logged", func() bool { return countPrefix(logs, "cannot reach NATS") > 0 })
	srv := startAt(t, t.TempDir(), addr)
	defer srv.Shutdown()
	r := <-done
	if r.err != nil {
		t.Fatalf("connect once the server is up: %v", r.err)
	}
	r.c.Close()
}

// TestConnectGivesUpWhenTheContextEnds: with nothing to connect to, the
// error names the URL and why it gave up.
func TestConnectGivesUpWhenTheContextEnds(t *testing.T) {
	addr := freeport.Addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{"nats://" + addr}})
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("err %v, want one naming %s and that it gave up", err, addr)
	}
}

// TestReconnectAfterServerRestart: the connection outlives its server's
// restart, says so in the log, and JetStream works again after it.
func TestReconnectAfterServerRestart(t *testing.T) {
	dir, addr := t.TempDir(), freeport.Addr(t)
	srv := startAt(t, dir, addr)
	logs := &logrec.Recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{"nats://" + addr}, Name: t.Name(), Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ensure(t, c.JS, bus.StreamConfig{})
	srv.Shutdown()
	poll.Eventually(t, 10*time.Second, "the disconnection to be logged", func() bool { return countPrefix(logs, "nats disconnected") == 1 })
	srv = startAt(t, dir, addr)
	defer srv.Shutdown()
	poll.Eventually(t, 20*time.Second, "the reconnection to be logged", func() bool { return countPrefix(logs, "nats reconnected") == 1 })
	if _, err := c.JS.Publish(ctx, "agentic.log.r.s", []byte("after the restart")); err != nil {
		t.Fatalf("publish after the reconnection: %v", err)
	}
}

// TestConnectWithTLS: the CA and the client certificate reach a server
// that verifies clients; without the client certificate, or trusting
// another CA, the connection is refused at once (retrying would not mend
// it), with the reason.
func TestConnectWithTLS(t *testing.T) {
	p := bustest.NewTLSFiles(t)
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p.Cert, KeyFile: p.Key, CaFile: p.CA, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(), TLSConfig: tc, TLS: true, TLSVerify: true, TLSTimeout: 2})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	url := "tls://" + srv.Addr().String()
	connect := func(tlsCfg bus.TLSConfig) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{url}, Name: t.Name(), TLS: tlsCfg})
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := connect(bus.TLSConfig{CA: p.CA, Cert: p.ClientCert, Key: p.ClientKey}); err != nil {
		t.Fatalf("connect with the CA and a client certificate: %v", err)
	}
	other := bustest.NewTLSFiles(t)
	for name, tt := range map[string]struct {
		cfg  bus.TLSConfig
		want string
	}{
		"no client certificate": {bus.TLSConfig{CA: p.CA}, "closed by remote after TLS handshake"},
		"another CA":            {bus.TLSConfig{CA: other.CA, Cert: p.ClientCert, Key: p.ClientKey}, "certificate signed by unknown authority"},
		"a certificate alone":   {bus.TLSConfig{CA: p.CA, Cert: p.ClientCert}, "needs its key"},
		"a missing CA file":     {bus.TLSConfig{CA: filepath.Join(t.TempDir(), "absent.pem")}, "absent.pem"},
	} {
		start := time.Now()
		err := connect(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, tt.want)
		}
		if d := time.Since(start); d > 15*time.Second { // well before the 20 s deadline: not retried until it
			t.Errorf("%s: refused after %s: retried what retrying cannot mend", name, d)
		}
	}
}

// TestConnectWithAMissingCredsFile: a credentials file that is not there is
// an error naming it, at once.
func TestConnectWithAMissingCredsFile(t *testing.T) {
	srv := bustest.Server(t)
	creds := filepath.Join(t.TempDir(), "agentd.creds")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{srv.ClientURL()}, Creds: creds})
	if err == nil || !strings.Contains(err.Error(), "agentd.creds") {
		t.Fatalf("err %v, want one naming the credentials file", err)
	}
	if ctx.Err() != nil {
		t.Fatal("retried until the context ended")
	}
}
