package pluginhost

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolCallOverhead measures what a tool call through the host
// costs beyond the same call made directly with the Go SDK's client, on
// servers already started: medians of interleaved calls, reported as
// host-ms, direct-ms and overhead-ms (the target is at most 5 ms). The
// host's call checks the server's current definition against its pin
// (tools/list), the grants and the policy, and renders, bounds and
// redacts the result. Sub-benchmarks: the Go SDK test server's echo,
// and the reference filesystem server's read_text_file (npm, from
// testdata/mcp).
func BenchmarkToolCallOverhead(b *testing.B) {
	data := b.TempDir()
	file := filepath.Join(data, "notes.md")
	if err := os.WriteFile(file, []byte("# notes\nship on friday\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("go", func(b *testing.B) {
		m := event.PluginManifest{Name: "go", Command: []string{goServer}, Grants: event.PluginGrants{Filesystem: []string{data}}, PathArgs: []string{"path"}}
		benchOverhead(b, m, "echo", `{"text":"hello"}`)
	})
	b.Run("npm-filesystem", func(b *testing.B) {
		dir, _ := filepath.Abs("../../../testdata/mcp")
		wrapper := filepath.Join(dir, "rugpull.mjs")
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")); err != nil {
			b.Fatalf("the reference MCP filesystem server is not installed: run `npm ci` in testdata/mcp (%v)", err)
		}
		nodeBin, err := exec.LookPath("node")
		if err != nil {
			b.Fatalf("node is not on PATH: %v", err)
		}
		m := event.PluginManifest{Name: "fs", Command: []string{nodeBin, wrapper, "", data}, Grants: event.PluginGrants{Filesystem: []string{data}}, PathArgs: []string{"path"}}
		benchOverhead(b, m, "read_text_file", `{"path":"`+file+`"}`)
	})
}

func benchOverhead(b *testing.B, m event.PluginManifest, tool, args string) {
	h := New(Config{Runner: runner.Options{KillGrace: 200 * time.Millisecond}, Logger: slog.New(slog.DiscardHandler)})
	defer h.Stop()
	view := plugin.View{Name: m.Name, Manifest: m, ManifestHash: plugin.ManifestHash(m)}
	h.Sync([]plugin.View{view})
	var hash, failed string
	_ = poll.Wait(30*time.Second, func() bool {
		tools, plugins := h.Report()
		for _, t := range tools {
			if t.Name == m.Name+"/"+tool {
				hash = t.Hash
			}
		}
		if len(plugins) > 0 && plugins[0].Error != "" {
			failed = plugins[0].Error
		}
		return hash != "" || failed != ""
	})
	if failed != "" {
		b.Fatal(failed)
	}
	if hash == "" {
		b.Fatal("the plugin's server reported no tool " + tool)
	}
	view.Tools = []plugin.ToolView{{Name: m.Name + "/" + tool, Pin: &event.ToolPin{Hash: hash}}}
	h.Sync([]plugin.View{view})

	// The same server, started the same way, called directly.
	proc, err := runner.StartServer(runner.ServerSpec{Argv: m.Command}, runner.Options{KillGrace: 200 * time.Millisecond}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer proc.Stop()
	ctx := context.Background()
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	direct := func() time.Duration {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil || res.IsError {
			b.Fatalf("direct call: %v %+v", err, res)
		}
		return time.Since(t0)
	}
	hosted := func() time.Duration {
		t0 := time.Now()
		r := h.Call(ctx, Call{Tool: m.Name + "/" + tool, Args: json.RawMessage(args)})
		if r.Status != event.TaskSucceeded {
			b.Fatalf("host call: %+v", r)
		}
		return time.Since(t0)
	}
	for range 5 { // warm both
		direct()
		hosted()
	}
	n := max(b.N, 50)
	ds, hs := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	b.ResetTimer()
	for range n {
		ds = append(ds, direct())
		hs = append(hs, hosted())
	}
	b.StopTimer()
	md, mh := median(ds), median(hs)
	b.ReportMetric(float64(mh.Microseconds())/1000, "host-ms")
	b.ReportMetric(float64(md.Microseconds())/1000, "direct-ms")
	b.ReportMetric(float64((mh-md).Microseconds())/1000, "overhead-ms")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
