package bus_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

func startTLS(t *testing.T, cfg embedded.Config) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if cfg.StoreDir == "" {
		cfg.StoreDir = filepath.Join(t.TempDir(), "nats")
	}
	e, err := embedded.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

func dialTLS(url string, files bus.TLSConfig) (*bus.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return bus.Connect(ctx, bus.ConnConfig{URLs: []string{url}, TLS: files})
}

// TestEmbeddedServesTLS: with a certificate the embedded server speaks
// only TLS to its TCP clients (a client that does not trust the CA is
// refused, one that does gets a TLS connection and JetStream), and the
// in-process connection agentd itself uses still works.
func TestEmbeddedServesTLS(t *testing.T) {
	pki := bustest.NewTLSFiles(t)
	e := startTLS(t, embedded.Config{Listen: "127.0.0.1:0", TLS: embedded.TLS{Cert: pki.Cert, Key: pki.Key}})
	url := e.ClientURL()

	if c, err := dialTLS(url, bus.TLSConfig{}); err == nil {
		c.Close()
		t.Fatal("a client that does not trust the server's CA connected")
	}
	c, err := dialTLS(url, bus.TLSConfig{CA: pki.CA})
	if err != nil {
		t.Fatalf("client trusting the CA: %v", err)
	}
	defer c.Close()
	if _, err := c.NC.TLSConnectionState(); err != nil {
		t.Errorf("connection is not TLS: %v", err)
	}
	in := bustest.Connect(t, e) // in-process, creates the streams
	if _, err := c.JS.Stream(context.Background(), bus.EventsStream); err != nil {
		t.Errorf("JetStream over TLS: %v", err)
	}
	if _, err := in.NC.TLSConnectionState(); err == nil {
		t.Error("the in-process connection claims TLS")
	}
}

// TestEmbeddedVerifiesClientCertificates: with a CA the server requires a
// client certificate the CA signed.
func TestEmbeddedVerifiesClientCertificates(t *testing.T) {
	pki := bustest.NewTLSFiles(t)
	e := startTLS(t, embedded.Config{Listen: "127.0.0.1:0", TLS: embedded.TLS{Cert: pki.Cert, Key: pki.Key, CA: pki.CA}})
	if c, err := dialTLS(e.ClientURL(), bus.TLSConfig{CA: pki.CA}); err == nil {
		c.Close()
		t.Fatal("a client without a certificate connected to a server that verifies clients")
	}
	c, err := dialTLS(e.ClientURL(), bus.TLSConfig{CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey})
	if err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	c.Close()
	bustest.Connect(t, e) // in-process still needs none
}

// TestEmbeddedRoutesUseTLS: two servers given a certificate and the CA
// route to each other over TLS; a server without TLS cannot join them.
func TestEmbeddedRoutesUseTLS(t *testing.T) {
	pki := bustest.NewTLSFiles(t)
	tlsFiles := embedded.TLS{Cert: pki.Cert, Key: pki.Key, CA: pki.CA}
	ra, rb := freeLoopback(t), freeLoopback(t)
	routes := []string{"nats://" + ra, "nats://" + rb}
	a := startTLS(t, embedded.Config{Listen: "127.0.0.1:0", ServerName: "a", ClusterName: "tls", ClusterListen: ra, Routes: routes, TLS: tlsFiles})
	b := startTLS(t, embedded.Config{Listen: "127.0.0.1:0", ServerName: "b", ClusterName: "tls", ClusterListen: rb, Routes: routes, TLS: tlsFiles})
	poll.Eventually(t, 20*time.Second, "a TLS route between a and b", func() bool {
		return a.NATS().NumRoutes() > 0 && b.NATS().NumRoutes() > 0
	})
	// The route port speaks TLS: a handshake with the CA and a
	// certificate it signed succeeds.
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(pki.CA)
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("read CA: %v", err)
	}
	cert, err := tls.LoadX509KeyPair(pki.Cert, pki.Key)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ra, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatalf("TLS handshake on the route port: %v", err)
	}
	conn.Close()

	plain := startTLS(t, embedded.Config{Listen: "127.0.0.1:0", ServerName: "p", ClusterName: "tls", ClusterListen: "127.0.0.1:0", Routes: []string{a.ClusterURL()}})
	// The plain server keeps trying: it must never count a route.
	err = poll.Wait(2*time.Second, func() bool { return plain.NATS().NumRoutes() > 0 })
	if err == nil {
		t.Fatal("a server without TLS routed to a TLS cluster")
	}
}

// TestEmbeddedTLSRefusesHalfAConfiguration: a certificate without its key,
// or a CA without a certificate, is refused before the server starts.
func TestEmbeddedTLSRefusesHalfAConfiguration(t *testing.T) {
	pki := bustest.NewTLSFiles(t)
	for _, tc := range []struct {
		tls  embedded.TLS
		want string
	}{
		{embedded.TLS{Cert: pki.Cert}, "TLS needs a certificate and its key"},
		{embedded.TLS{CA: pki.CA}, "needs the server's certificate and key (--nats-tls-cert, --nats-tls-key)"},
		{embedded.TLS{Cert: pki.Cert, Key: filepath.Join(t.TempDir(), "absent.pem")}, "embedded nats-server TLS"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e, err := embedded.Start(ctx, embedded.Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", TLS: tc.tls})
		cancel()
		if err == nil {
			e.Shutdown()
			t.Errorf("%+v: started", tc.tls)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.tls, err, tc.want)
		}
	}
}

// freeLoopback is a loopback address with a port free right now.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
