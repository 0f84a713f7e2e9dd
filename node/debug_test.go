package node_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestDebugListenServesProfiles: debug_listen serves the Go profiles on a
// listener of its own, and neither the API nor the node without it does.
func TestDebugListenServesProfiles(t *testing.T) {
	cfg := nodetest.Config(t.TempDir())
	cfg.DebugListen = "127.0.0.1:0"
	n := nodetest.Start(t, cfg)
	if n.DebugAddr() == "" {
		t.Fatal("DebugAddr empty with debug_listen set")
	}
	debug, api := "http://"+n.DebugAddr(), loopbackURL(t, n.HTTPAddr())
	poll.Eventually(t, 30*time.Second, "readyz 200", func() bool {
		code, _ := getAuth(t, api+"/readyz", "")
		return code == 200
	})
	code, body := getAuth(t, debug+"/debug/pprof/heap?debug=1", "")
	if code != 200 || !strings.HasPrefix(body, "heap profile:") {
		t.Errorf("/debug/pprof/heap?debug=1: %d %.80q, want 200 and a heap profile", code, body)
	}
	if code, body := getAuth(t, debug+"/debug/pprof/", ""); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %d %.80q, want 200 and the index", code, body)
	}
	if code, _ := getAuth(t, debug+"/readyz", ""); code != 404 {
		t.Errorf("/readyz on the debug listener: %d, want 404", code)
	}
	if code, _ := getAuth(t, api+"/debug/pprof/heap", ""); code != 404 {
		t.Errorf("/debug/pprof/heap on the API listener: %d, want 404", code)
	}
}

// TestDebugListenNotLoopbackRefused: a debug listener on an address that
// is not loopback is refused without --insecure, naming the key and the
// way out; nothing is started.
func TestDebugListenNotLoopbackRefused(t *testing.T) {
	cfg := nodetest.Config(t.TempDir())
	cfg.DebugListen = "0.0.0.0:0"
	if _, err := node.New(cfg, nil); err == nil {
		t.Fatal("node.New accepted debug_listen 0.0.0.0:0 without --insecure")
	} else if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), `debug_listen: "0.0.0.0:0" is not a loopback address`) || !strings.Contains(err.Error(), "--insecure") {
		t.Errorf("node.New error = %v, want debug_listen not loopback, naming --insecure", err)
	}
}
