package node_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/plugin"
)

// buildGoServer builds the Go SDK test MCP server (testdata/mcp/goserver).
func buildGoServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "goserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../testdata/mcp/goserver").CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	return bin
}

// addApprovedPlugin publishes plugin.added for m, waits for the node's
// executor to report its tools, approves them, and waits for the pins.
func addApprovedPlugin(t *testing.T, n *nodetest.Node, m event.PluginManifest) plugin.View {
	t.Helper()
	ctx := context.Background()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.PluginAdded, "", event.PluginAddedData{Manifest: m})); err != nil {
		t.Fatal(err)
	}
	var v plugin.View
	poll.Eventually(t, 60*time.Second, "the executor reports the plugin's tools", func() bool {
		err := n.API.Call(ctx, api.MethodPluginsShow, api.PluginRequest{Name: m.Name}, &v)
		return err == nil && len(v.Tools) > 0 && len(v.Executors) == 1
	})
	if v.Executors[0].Error != "" {
		t.Fatalf("plugin server: %s", v.Executors[0].Error)
	}
	appr, err := v.Approval("test")
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.PluginApproved, "", appr)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the tools approved", func() bool {
		err := n.API.Call(ctx, api.MethodPluginsShow, api.PluginRequest{Name: m.Name}, &v)
		return err == nil && v.Approved != nil && v.Tools[0].Status == plugin.ToolApproved
	})
	return v
}

// acceptGates accepts every gate of run as they open, until it finishes.
func acceptGates(t *testing.T, n *nodetest.Node, run string) *api.RunSummary {
	t.Helper()
	ctx := context.Background()
	var s *api.RunSummary
	poll.Eventually(t, 60*time.Second, "run "+run+" finished", func() bool {
		gates, err := n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		if err == nil {
			for _, g := range gates {
				d := event.MustDraft(event.GateDecided, run, event.GateDecidedData{Step: g.Step, Subject: g.Subject, Action: event.GateAccept})
				if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
					t.Fatal(err)
				}
			}
		}
		s, err = n.API.RunSummary(ctx, run)
		return err == nil && (s.Status == event.RunSucceeded || s.Status == event.RunFailed)
	})
	return s
}

// finished returns the task.finished payloads of run, by step.
func finished(t *testing.T, n *nodetest.Node, run string) map[string]event.TaskFinishedData {
	t.Helper()
	out := map[string]event.TaskFinishedData{}
	for l, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type != string(event.TaskFinished) {
			continue
		}
		var d event.TaskFinishedData
		if err := json.Unmarshal(l.Data, &d); err != nil {
			t.Fatal(err)
		}
		out[d.Step] = d
	}
	return out
}

// TestToolStepThroughTheCluster: a plugin added and approved on a real
// node runs a tool step of a plan file — gated (a tool is not judged by
// the shell rules), run after the approval, its result recorded
// redacted in task.finished; a path outside the file scope or the
// plugin's grant is denied before assignment, with a located reason.
func TestToolStepThroughTheCluster(t *testing.T) {
	bin := buildGoServer(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "notes.md"), []byte("the notes\npassword=hunter2hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	addApprovedPlugin(t, n, event.PluginManifest{Name: "go", Command: []string{bin},
		Grants: event.PluginGrants{Filesystem: []string{data}}, PathArgs: []string{"path"}})

	run := submitGoal(t, n, "read", "goal: read\nsteps:\n  - id: read\n    tool: go/read\n    args: {path: "+filepath.Join(data, "notes.md")+"}\n")
	if s := acceptGates(t, n, run); s.Status != event.RunSucceeded {
		t.Fatalf("run %s: %+v", run, s)
	}
	fin := finished(t, n, run)["read"]
	if !strings.Contains(fin.OutputTail, "the notes") || strings.Contains(fin.OutputTail, "hunter2hunter2") {
		t.Fatalf("read's output %q: want the notes, redacted", fin.OutputTail)
	}

	run = submitGoal(t, n, "escape", "goal: escape\nsteps:\n  - id: escape\n    tool: go/read\n    args: {path: /etc/passwd}\n")
	if s := acceptGates(t, n, run); s.Status != event.RunFailed {
		t.Fatalf("run %s: %+v", run, s)
	}
	// The leader judges the path against the grant before assignment
	// (tools.go of the orchestrator core): no executor sees it.
	if _, ran := finished(t, n, run)["escape"]; ran {
		t.Fatal("escape was assigned")
	}
	rv, err := n.API.RunsGet(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if st := rv.Steps[0]; st.Code != "policy_denied" || !strings.Contains(st.Error, `args.path "/etc/passwd" lies outside`) {
		t.Fatalf("escape: %+v", st)
	}

	// A server that crashes mid-call, and one that hangs past the
	// step's timeout, fail their steps clearly; the executor goes on.
	// (One server serves the plugin's calls: a crash fails the calls in
	// flight with it, so these run one after the other.)
	run = submitGoal(t, n, "bad", "goal: bad\nsteps:\n  - id: crash\n    tool: go/crash\n    on_failure: continue\n"+
		"  - id: hang\n    tool: go/hang\n    timeout: 1s\n    on_failure: continue\n    depends_on: [crash]\n"+
		"  - id: after\n    tool: go/echo\n    args: {text: still here}\n    depends_on: [hang]\n")
	acceptGates(t, n, run)
	fins := finished(t, n, run)
	if c := fins["crash"]; c.Status != event.TaskFailed || c.Class != event.ClassTransient || !strings.Contains(c.Error, "exited with status 3") {
		t.Errorf("crash: %+v", c)
	}
	if h := fins["hang"]; h.Status != event.TaskFailed || !h.TimedOut || !strings.Contains(h.Error, "no answer within 1s") {
		t.Errorf("hang: %+v", h)
	}
	if a := fins["after"]; a.Status != event.TaskSucceeded || a.OutputTail != "still here" {
		t.Errorf("after: %+v", a)
	}
}
