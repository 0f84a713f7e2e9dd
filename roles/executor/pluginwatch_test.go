package executor

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// TestPluginEventsStartServersWithoutPolling: with the periodic resync an
// hour away, a plugin.added makes the executor read the plugins in force,
// start the plugin's server and report its tools within seconds; a
// plugin.removed stops it the same way. The plugins source lags the event
// (as a ledger node's index does): the executor reads again, a bounded
// number of times, until it sees the change.
func TestPluginEventsStartServersWithoutPolling(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "goserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../testdata/mcp/goserver").CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	h := newHarness(t)
	var views atomic.Pointer[[]plugin.View]
	views.Store(&[]plugin.View{})
	var reads atomic.Int32
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, func(c *Config) {
		c.Plugins = Plugins{Every: time.Hour, List: func(context.Context) ([]plugin.View, error) {
			reads.Add(1)
			return *views.Load(), nil
		}}
	})
	poll.Eventually(t, 10*time.Second, "the first read of the plugins", func() bool { return reads.Load() >= 1 })

	m := event.PluginManifest{Name: "go", Command: []string{bin}}
	h.publish(event.MustDraft(event.PluginAdded, "", event.PluginAddedData{Manifest: m}))
	// The index has it a little after the event.
	time.AfterFunc(300*time.Millisecond, func() {
		views.Store(&[]plugin.View{{Name: "go", Manifest: m, ManifestHash: plugin.ManifestHash(m)}})
	})
	reports := func(tool string) bool {
		o := rec.online()
		if len(o) == 0 {
			return false
		}
		return slices.ContainsFunc(o[len(o)-1].Tools, func(r event.ToolReport) bool { return r.Name == tool })
	}
	poll.Eventually(t, 15*time.Second, "the added plugin's tools reported", func() bool { return reports("go/echo") })

	h.publish(event.MustDraft(event.PluginRemoved, "", event.PluginRemovedData{Plugin: "go"}))
	time.AfterFunc(300*time.Millisecond, func() { views.Store(&[]plugin.View{}) })
	poll.Eventually(t, 15*time.Second, "the removed plugin's tools no longer reported", func() bool { return !reports("go/echo") })
	if n := reads.Load(); n > 200 {
		t.Errorf("%d reads of the plugins for two events: that is polling", n)
	}
}

// TestPluginsReadAgainWhileTheNodeStarts: at a node's start its own query
// API may not answer yet; the executor reads the plugins in force again
// soon (not an interval later) and warns of nothing while no ledger node
// answers during its first moments.
func TestPluginsReadAgainWhileTheNodeStarts(t *testing.T) {
	h := newHarness(t)
	var logs lockedBuffer
	h.logs = &logs
	var reads atomic.Int32
	h.start("exec-1", t.TempDir(), &recorder{}, func(c *Config) {
		c.Plugins = Plugins{Every: time.Hour, List: func(context.Context) ([]plugin.View, error) {
			if reads.Add(1) <= 3 {
				return nil, &apiwire.NoResponderError{Subject: "agentic.api.plugins.list", URL: "nats://in-process"}
			}
			return []plugin.View{}, nil
		}}
	})
	poll.Eventually(t, 10*time.Second, "a read after the node's API answers", func() bool { return reads.Load() >= 4 })
	if strings.Contains(logs.String(), "plugins in force") {
		t.Errorf("a starting node warned of its plugins:\n%s", logs.String())
	}
}
