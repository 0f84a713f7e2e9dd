package executor

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"
)

// toolBenchPolicy allows the Go test server's tools.
const toolBenchPolicy = "name: toolbench\ndefault: allow\ntools:\n  - tool: \"go/*\"\n    action: allow\n"

// BenchmarkToolStepOverhead measures a tool step's overhead as issue 22
// specifies it: from the executor receiving the assignment (the consumer
// delivering it) to the task.finished it emits, minus the same call made
// directly with the Go SDK's client on a second instance of the same
// server, already started; fsyncs excluded (the executor's local state on
// an in-memory file system; the emitter records in memory). Between the
// two: the local record of the attempt, the policy's judgement (vet and
// the tool's with its pinned definition), the pin check, the call through
// the plugin host, rendering, redaction, the output's publication and the
// report. Sequential steps, medians, reported as step-ms, direct-ms and
// overhead-ms; the target is at most 5 ms.
func BenchmarkToolStepOverhead(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "goserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../testdata/mcp/goserver").CombinedOutput(); err != nil {
		b.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	h := newHarness(b)
	led := h.servePolicies(map[int64]string{1: toolBenchPolicy})
	ref := led.refs[1]
	m := event.PluginManifest{Name: "go", Command: []string{bin}}
	view := plugin.View{Name: "go", Manifest: m, ManifestHash: plugin.ManifestHash(m)}
	var mu sync.Mutex
	views := []plugin.View{view}
	received := map[uint64]time.Time{}
	finished := map[string]time.Time{}
	rec := &recorder{onDraft: func(d event.Draft) {
		if d.Type == event.TaskFinished {
			mu.Lock()
			finished[d.Run] = time.Now()
			mu.Unlock()
		}
	}}
	h.start("exec-1", b.TempDir(), rec, func(c *Config) {
		c.Safety.Policies = APIPolicies(led.client)
		c.stateFS = vfs.NewMem()
		c.received = func(m jetstream.Msg) {
			if md, err := m.Metadata(); err == nil {
				mu.Lock()
				received[md.Sequence.Stream] = time.Now()
				mu.Unlock()
			}
		}
		c.Plugins = Plugins{Every: time.Hour, List: func(context.Context) ([]plugin.View, error) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(views), nil
		}}
	})
	// Pin what the server reports.
	poll.Eventually(b, 30*time.Second, "the server's tools reported", func() bool {
		o := rec.online()
		if len(o) == 0 {
			return false
		}
		for _, t := range o[len(o)-1].Tools {
			if t.Name == "go/echo" {
				mu.Lock()
				views[0].Tools = []plugin.ToolView{{Name: t.Name, Pin: &event.ToolPin{Hash: t.Hash}}}
				mu.Unlock()
				return true
			}
		}
		return false
	})
	h.publish(event.MustDraft(event.PluginApproved, "", event.PluginApprovedData{Plugin: "go"})) // wakes the executor to read the pin

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
	args := json.RawMessage(`{"text":"hello"}`)
	direct := func() time.Duration {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("direct call: %v %+v", err, res)
		}
		return time.Since(t0)
	}
	step := func() time.Duration {
		run := event.NewID()
		d := event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{Decision: event.Decision{Epoch: 1}, Attempt: 1, Node: "exec-1",
			Step: event.Step{ID: "call", Kind: event.KindTool, Tool: "go/echo", Args: args}, Policy: ref})
		d.Target = "exec-1"
		h.publish(d)
		seq := h.lastSeq()
		var got time.Time
		poll.Eventually(b, 20*time.Second, "the tool step's result", func() bool {
			mu.Lock()
			defer mu.Unlock()
			got = finished[run]
			return !got.IsZero()
		})
		f := rec.finished("call")
		if last := f[len(f)-1]; last.Status != event.TaskSucceeded {
			b.Fatalf("tool step: %+v", last)
		}
		mu.Lock()
		at, ok := received[seq]
		mu.Unlock()
		if !ok {
			b.Fatalf("no receipt of stream seq %d", seq)
		}
		return got.Sub(at)
	}
	for range 5 { // warm both
		direct()
		step()
	}
	n := max(b.N, 50)
	ds, ss := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	b.ResetTimer()
	for range n {
		ds = append(ds, direct())
		ss = append(ss, step())
	}
	b.StopTimer()
	md, ms := medianOf(ds), medianOf(ss)
	b.ReportMetric(float64(ms.Microseconds())/1000, "step-ms")
	b.ReportMetric(float64(md.Microseconds())/1000, "direct-ms")
	b.ReportMetric(float64((ms-md).Microseconds())/1000, "overhead-ms")
	b.ReportMetric(0, "ns/op")
}

func medianOf(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
