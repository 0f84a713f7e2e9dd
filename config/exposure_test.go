package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestExposureNeedsTLSOrInsecure: the embedded server's client and
// cluster addresses and gossip, on an address that is not loopback, are
// refused without TLS or the gossip key, each error naming the flags that
// mend it; --insecure allows them and says what it leaves open; loopback
// needs neither.
func TestExposureNeedsTLSOrInsecure(t *testing.T) {
	c := Default()
	c.NATSListen, c.NATSClusterListen, c.GossipListen = "0.0.0.0:4222", "10.0.0.1:6222", ":7946"
	c.GossipAdvertise, c.HTTPListen = "10.0.0.1:7946", "0.0.0.0:8080"
	err := c.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
	for _, w := range []string{
		`nats_listen: "0.0.0.0:4222" is not a loopback address`,
		`nats_cluster_listen: "10.0.0.1:6222" is not a loopback address`,
		`gossip_listen: ":7946" is not a loopback address`,
		"--nats-tls-cert and --nats-tls-key", "--gossip-key-file", "--insecure",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate error lacks %q:\n%v", w, err)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != 3 {
		t.Errorf("Validate reported %d problems, want 3 (HTTP asks for a token instead):\n%v", n, err)
	}
	if !c.HTTPAuthRequired() {
		t.Error("HTTP on 0.0.0.0 without --insecure: HTTPAuthRequired = false")
	}

	// --insecure, from the command line as agentd parses it.
	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
	scratch := Default()
	scratch.BindFlags(fs)
	if err := fs.Parse([]string{"--insecure"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(fs); err != nil {
		t.Fatal(err)
	}
	if !c.Insecure {
		t.Fatal("--insecure did not set Insecure")
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("with --insecure: Validate = %v", err)
	}
	if c.HTTPAuthRequired() {
		t.Error("with --insecure: HTTPAuthRequired = true")
	}
	got := c.InsecureExposure()
	want := []string{"NATS clients on 0.0.0.0:4222 without TLS", "NATS routes on 10.0.0.1:6222 without TLS", "gossip on :7946 unencrypted", "HTTP API on 0.0.0.0:8080 without a token"}
	if !slices.Equal(got, want) {
		t.Errorf("InsecureExposure = %q, want %q", got, want)
	}

	// Loopback, and the defaults: nothing to secure, nothing exposed.
	for _, addr := range []string{"127.0.0.1:4222", "localhost:4222", "[::1]:4222", "127.0.0.5:1"} {
		if !Loopback(addr) {
			t.Errorf("Loopback(%q) = false", addr)
		}
	}
	for _, addr := range []string{":4222", "0.0.0.0:4222", "[::]:4222", "10.0.0.1:4222", "node-a:4222", "nonsense"} {
		if Loopback(addr) {
			t.Errorf("Loopback(%q) = true", addr)
		}
	}
	d := Default()
	d.GossipListen, d.NATSClusterListen = "127.0.0.1:7946", "127.0.0.1:6222"
	if err := d.Validate(); err != nil {
		t.Errorf("loopback everywhere: Validate = %v", err)
	}
	d.Insecure = true
	if d.HTTPAuthRequired() || len(d.InsecureExposure()) != 0 {
		t.Errorf("loopback with --insecure: auth %v, exposure %q", d.HTTPAuthRequired(), d.InsecureExposure())
	}
}

// TestDebugListenLoopbackUnlessInsecure: the profiles' listener is refused
// off loopback unless Insecure, which the banner then names.
func TestDebugListenLoopbackUnlessInsecure(t *testing.T) {
	c := Default()
	c.DebugListen = "127.0.0.1:6060"
	if err := c.Validate(); err != nil {
		t.Fatalf("debug_listen on loopback: Validate = %v", err)
	}
	c.DebugListen = ":6060"
	err := c.Validate()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `debug_listen: ":6060" is not a loopback address`) || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("debug_listen :6060: Validate = %v, want not loopback, naming --insecure", err)
	}
	c.DebugListen = "nonsense"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "debug_listen") {
		t.Errorf("debug_listen nonsense: Validate = %v, want a debug_listen error", err)
	}
	c.DebugListen, c.Insecure = ":6060", true
	if err := c.Validate(); err != nil {
		t.Fatalf("with --insecure: Validate = %v", err)
	}
	if got := c.InsecureExposure(); !slices.Contains(got, "Go profiles on :6060") {
		t.Errorf("InsecureExposure = %q, want it to name the profiles", got)
	}
}
