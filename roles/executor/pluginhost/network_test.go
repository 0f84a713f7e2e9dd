package pluginhost

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// denyAll is a policy's NetworkAllowed with an empty scopes.network.
func denyAll(target string) (bool, string) {
	return false, target + ": the policy's scopes.network is empty, so no host may be reached"
}

// TestNetworkGrantJudgedAtStart: a server whose grants.network the policy
// in force does not allow is not started; its report says why, with the
// grant's place; a call of its tools fails with that reason. A call whose
// step's policy does not allow the grant is refused too (class policy).
func TestNetworkGrantJudgedAtStart(t *testing.T) {
	m := event.PluginManifest{Name: "go", Command: []string{goServer}, Grants: event.PluginGrants{Network: []string{"api.example.com:443"}}}
	h := New(Config{Runner: runner.Options{KillGrace: 200 * time.Millisecond}, Logger: slog.New(slog.DiscardHandler),
		Network: func(context.Context) (func(string) (bool, string), error) { return denyAll, nil }})
	t.Cleanup(h.Stop)
	h.Sync([]plugin.View{{Name: "go", Manifest: m, ManifestHash: plugin.ManifestHash(m)}})
	deadline := time.After(30 * time.Second)
	for {
		tools, plugins := h.Report()
		if len(plugins) == 1 {
			if len(tools) != 0 || !strings.Contains(plugins[0].Error, `grants.network[0] "api.example.com:443" of plugin go`) {
				t.Fatalf("report %+v %+v: want no tools and the refused grant", tools, plugins)
			}
			break
		}
		select {
		case <-h.Changed():
		case <-deadline:
			t.Fatal("no report")
		}
	}
	res := h.Call(context.Background(), Call{Tool: "go/echo", Args: []byte(`{"text":"x"}`), Network: denyAll})
	if res.Status != event.TaskFailed || res.Class != event.ClassPolicy || !strings.Contains(res.Error, `grants.network[0] "api.example.com:443"`) {
		t.Fatalf("call: %+v, want refused with the grant", res)
	}
}

// TestServerWithoutNetworkGrant: a server whose grants.network is empty
// runs in a network namespace of its own (where the kernel allows it).
func TestServerWithoutNetworkGrant(t *testing.T) {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and /proc: a network namespace is the kernel's to refuse an unprivileged executor")
	}
	f := newFixture(t)
	f.sync(nil)
	f.reported()
	f.h.mu.Lock()
	s := f.h.mu.servers[key{plugin: "go"}]
	f.h.mu.Unlock()
	s.mu.Lock()
	pid := s.mu.proc.PID
	s.mu.Unlock()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil || ns == own {
		t.Fatalf("server %d: network namespace %s (%v), the executor's %s: want its own", pid, ns, err, own)
	}
}
