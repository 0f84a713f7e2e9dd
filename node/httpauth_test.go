package node_test

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// getAuth requests url with an optional bearer token; it returns the status
// and body (0 when the request failed).
func getAuth(t *testing.T, url, token string) (int, string) {
	t.Helper()
	if token != "" {
		token = "Bearer " + token
	}
	return getWith(t, url, "Authorization", token)
}

// loopbackURL is http://127.0.0.1:PORT for a listener on addr (which may
// bind every address).
func loopbackURL(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + port
}

// TestExposedNodeNeedsTokenAndTLS: a node whose NATS and HTTP listen on
// every address serves NATS over TLS (its own in-process connection works:
// it becomes ready), asks every HTTP API request for an operator token of
// its root, and serves the probes and metrics without one on the probe
// listener only.
func TestExposedNodeNeedsTokenAndTLS(t *testing.T) {
	dir := t.TempDir()
	pki := bustest.NewTLSFiles(t)
	cfg := nodetest.Config(dir)
	cfg.NATSListen, cfg.HTTPListen, cfg.ProbeListen = "0.0.0.0:0", "0.0.0.0:0", "127.0.0.1:0"
	cfg.NATSTLSCert, cfg.NATSTLSKey = pki.Cert, pki.Key
	n, err := node.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	if !n.HTTPAuth() || n.ProbeAddr() == "" {
		t.Fatalf("HTTPAuth %v, ProbeAddr %q", n.HTTPAuth(), n.ProbeAddr())
	}
	probe, api := "http://"+n.ProbeAddr(), loopbackURL(t, n.HTTPAddr())
	poll.Eventually(t, 30*time.Second, "readyz 200 on the probe listener", func() bool {
		code, _ := getAuth(t, probe+"/readyz", "")
		return code == 200
	})
	for _, p := range []string{"/healthz", "/metrics"} {
		if code, body := getAuth(t, probe+p, ""); code != 200 {
			t.Errorf("probe %s: %d %s", p, code, body)
		}
	}
	if code, _ := getAuth(t, probe+"/api/runs", ""); code != 404 {
		t.Errorf("probe listener /api/runs: %d, want 404 (the API is not there)", code)
	}

	// NATS on every address speaks TLS only.
	u, err := url.Parse(n.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	nats := "127.0.0.1:" + u.Port()
	auth, _, err := natsauth.CredsOptions(filepath.Join(dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	c, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{"tls://" + nats}, TLS: bus.TLSConfig{CA: pki.CA}, Identity: auth})
	if err != nil {
		t.Fatalf("NATS over TLS: %v", err)
	}
	c.Close()
	if _, err := bus.Connect(ctx, bus.ConnConfig{URLs: []string{"nats://" + nats}, Identity: auth}); err == nil {
		t.Error("a client that does not trust the server's certificate connected")
	}

	op, _, err := trust.ReadCreds(filepath.Join(dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	token, err := trust.APIToken(op, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := trust.NewIdentity(other, op.ID, trust.KindOperator, op.Roles, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := trust.APIToken(stranger, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/api/runs", "", 401, "needs an operator token"},
		{"/api/runs", "garbage", 401, "bad API token"},
		{"/api/runs", foreign, 401, "bad credential"},
		{"/api/runs", token, 200, `"items"`},
		{"/readyz", "", 401, "needs an operator token"},
		{"/readyz", token, 404, ""}, // the probes are on their own listener
	} {
		code, body := getAuth(t, api+tc.path, tc.token)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s with token %.12q: %d %q, want %d saying %q", tc.path, tc.token, code, body, tc.code, tc.body)
		}
	}
}

// TestInsecureNodeServesAPIWithoutToken: --insecure lets the HTTP API on
// every address answer without a token, and the probes stay on the API's
// listener when no probe listener is set.
func TestInsecureNodeServesAPIWithoutToken(t *testing.T) {
	cfg := nodetest.Config(t.TempDir())
	cfg.HTTPListen, cfg.Insecure = "0.0.0.0:0", true
	n := nodetest.Start(t, cfg)
	if n.HTTPAuth() || n.ProbeAddr() != "" {
		t.Fatalf("HTTPAuth %v, ProbeAddr %q", n.HTTPAuth(), n.ProbeAddr())
	}
	api := loopbackURL(t, n.HTTPAddr())
	poll.Eventually(t, 30*time.Second, "readyz 200", func() bool {
		code, _ := getAuth(t, api+"/readyz", "")
		return code == 200
	})
	if code, body := getAuth(t, api+"/api/runs", ""); code != 200 {
		t.Errorf("/api/runs: %d %s", code, body)
	}
}
