package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/policy"
)

// applyPolicy makes text the policy in force on n and waits for it.
func applyPolicy(t *testing.T, n *nodetest.Node, text string) {
	t.Helper()
	ctx := context.Background()
	p, err := policy.Parse([]byte(text), "test")
	if err != nil {
		t.Fatal(err)
	}
	var in api.PolicyVersion
	poll.Eventually(t, 30*time.Second, "the leader's bootstrap policy", func() bool {
		return n.API.Call(ctx, api.MethodPolicyShow, api.PolicyRequest{}, &in) == nil
	})
	base := in.Version
	d := event.MustDraft(event.PolicyApplied, "", event.PolicyAppliedData{Base: base, Name: p.Name, Hash: p.Hash(), Text: text,
		Source: event.PolicyFromApply, Reason: "test"})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the policy applied", func() bool {
		return n.API.Call(ctx, api.MethodPolicyShow, api.PolicyRequest{}, &in) == nil && in.Version == base+1
	})
}

// TestToolStepsJudgedByDefinition: the leader judges a tool step with its
// pinned definition. A read-only tool of a plugin the policy trusts runs
// without a gate; a tool whose definition says destructiveHint, which a
// rule puts at level medium (allowed), is raised to high and waits at a
// gate — it is not refused by the executor — and runs once approved; a
// path outside the plugin's grant is denied before any executor sees it.
func TestToolStepsJudgedByDefinition(t *testing.T) {
	bin := buildGoServer(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "notes.md"), []byte("the notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	applyPolicy(t, n, "name: tools\ndefault: allow\nunresolved: confirm\n"+
		"levels: {low: allow, medium: allow, high: confirm, critical: confirm}\n"+
		"scopes:\n  files: [\""+data+"/**\", \"/tmp/**\"]\n"+
		"tools:\n  - tool: go/write\n    level: medium\n  - tool: \"go/*\"\n    trusted: true\n")
	addApprovedPlugin(t, n, event.PluginManifest{Name: "go", Command: []string{bin},
		Grants: event.PluginGrants{Filesystem: []string{data}}, PathArgs: []string{"path"}})
	ctx := context.Background()

	// Trusted and read-only by its pinned definition: no gate.
	run := submitGoal(t, n, "read", "goal: read\nsteps:\n  - id: read\n    tool: go/read\n    args: {path: "+filepath.Join(data, "notes.md")+"}\n")
	var s *api.RunSummary
	poll.Eventually(t, 60*time.Second, "the read ran without a gate", func() bool {
		gates, err := n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		if err == nil && len(gates) > 0 {
			t.Fatalf("the trusted read-only tool was gated: %+v", gates[0].Verdict)
		}
		s, err = n.API.RunSummary(ctx, run)
		return err == nil && (s.Status == event.RunSucceeded || s.Status == event.RunFailed)
	})
	if s.Status != event.RunSucceeded {
		t.Fatalf("read: %+v", s)
	}

	// destructiveHint raises the rule's medium to high: a gate, bound to
	// the definition, then the write.
	target := filepath.Join(data, "out.md")
	run = submitGoal(t, n, "write", "goal: write\nsteps:\n  - id: write\n    tool: go/write\n    args: {path: "+target+", content: written}\n")
	var gates []api.Gate
	poll.Eventually(t, 60*time.Second, "the write's gate", func() bool {
		var err error
		gates, err = n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		if s, err := n.API.RunSummary(ctx, run); err == nil && s.Status == event.RunFailed {
			t.Fatalf("the write failed instead of waiting at a gate: %+v", finished(t, n, run)["write"])
		}
		return err == nil && len(gates) == 1
	})
	g := gates[0]
	if g.Verdict == nil || g.Verdict.Level != "high" || g.ToolHash == "" || !strings.Contains(g.Verdict.Why, "destructiveHint") {
		t.Fatalf("gate %+v verdict %+v: want level high from destructiveHint, bound to a definition", g, g.Verdict)
	}
	if g.Subject != event.ToolGateSubject(*g.Spec, g.Policy, g.ToolHash) {
		t.Fatal("the gate's subject does not bind its definition hash")
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("written before the approval")
	}
	if s := acceptGates(t, n, run); s.Status != event.RunSucceeded {
		t.Fatalf("write after approval: %+v %+v", s, finished(t, n, run)["write"])
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "written" {
		t.Fatalf("after approval: %q, %v", b, err)
	}

	// Outside the grant: denied by the leader, never assigned.
	run = submitGoal(t, n, "escape", "goal: escape\nsteps:\n  - id: escape\n    tool: go/read\n    args: {path: /etc/passwd}\n")
	s = acceptGates(t, n, run)
	if s.Status != event.RunFailed {
		t.Fatalf("escape: %+v", s)
	}
	if _, ran := finished(t, n, run)["escape"]; ran {
		t.Fatal("the escape was assigned to an executor")
	}
	rv, err := n.API.RunsGet(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if st := rv.Steps[0]; st.Code != "policy_denied" || !strings.Contains(st.Error, `args.path "/etc/passwd"`) {
		t.Fatalf("escape: code %s error %q, want a located policy refusal", st.Code, st.Error)
	}
}
