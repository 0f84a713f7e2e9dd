package node_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// plantPlan: a step that fails after printing a value, which it writes
// as a shared fact: the fact starts quarantined.
const plantPlan = `goal: plant
steps:
  - id: plant
    run: echo planted-7f3a; exit 1
    on_failure: continue
    facts:
      - {key: planted, from: stdout, scope: shared}
`

// learnPlan: a run of family nightly learns a value and a later step of
// it reads it back through its command.
const learnPlan = `goal: learn
family: nightly
steps:
  - id: probe
    run: echo 1.24
    facts:
      - {key: nginx.version, from: stdout, scope: family, tags: [infra]}
  - id: use
    depends_on: [probe]
    run: test ${memory:family/nginx.version} = 1.24 && test ${memory:shared/greeting} = "it's me"
`

// readPlan reads the planted fact in a command and in a critique's
// criteria (a prompt), and a clean one in another critique.
const readPlan = `goal: read
steps:
  - id: hello
    run: echo hello
  - id: use
    depends_on: [hello]
    run: echo ${memory:shared/planted}
    on_failure: continue
  - id: judge.planted
    kind: critique
    target: hello
    criteria: the output says ${memory:shared/planted}
    on_failure: continue
  - id: judge.greeting
    kind: critique
    target: hello
    criteria: the output is not ${memory:shared/greeting}
    on_failure: continue
`

// TestMemoryFactsEndToEnd: a step's fact carries refs that lead to the
// event that wrote it in the ledger; a later step of the run reads it
// (and an operator's fact) through ${memory:…}, resolved, shell-quoted
// and recorded in task.assigned; a fact a failed step wrote is
// quarantined, and a command or a prompt that reads it fails with the
// reason, while the model never sees its value; the runs replay.
func TestMemoryFactsEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var prompts []string
	srv := llmtest.Server(t, func(prompt string) string {
		mu.Lock()
		prompts = append(prompts, prompt)
		mu.Unlock()
		return `{"verdict": "pass", "judgement": "fine"}`
	})
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	ctx := context.Background()

	put := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "greeting", Value: "it's me", Tags: []string{"people"}})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, put); err != nil {
		t.Fatal(err)
	}
	if err := poll.Wait(10*time.Second, func() bool { _, err := n.API.MemoryGet(ctx, "shared", "greeting"); return err == nil }); err != nil {
		t.Fatal("the operator's fact never showed")
	}

	learn := n.WaitRun(t, n.Submit(t, "learn.yaml", learnPlan), 30*time.Second)
	if learn.Status != event.RunSucceeded {
		t.Fatalf("learn run: %s (%s)", learn.Status, learn.Reason)
	}
	f, err := n.API.MemoryGet(ctx, "family:nightly", "nginx.version")
	if err != nil || f.Value != "1.24" || f.Quarantined || f.Refs == nil || f.Refs.Run != learn.ID || f.Refs.Step != "probe" || f.Refs.Attempt != 1 {
		t.Fatalf("learned fact = %+v, %v", f, err)
	}
	// The refs lead to the event that wrote the fact.
	p, err := n.API.Audit(ctx, api.AuditRequest{After: f.Refs.Seq - 1, Limit: 1})
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("ledger at seq %d: %+v %v", f.Refs.Seq, p, err)
	}
	line := p.Items[0]
	var rec event.MemoryRecordedData
	if line.Seq != f.Refs.Seq || line.Type != string(event.MemoryRecorded) || line.Run != learn.ID || json.Unmarshal(line.Data, &rec) != nil ||
		rec.Key != "nginx.version" || rec.Value != "1.24" || rec.Step != "probe" || line.JWS == "" {
		t.Fatalf("ledger line at the fact's seq: %+v (%+v)", line, rec)
	}
	// The reading step's assignment carries the resolved, quoted command
	// and the values.
	assigned := findAssigned(t, n, learn.ID, "use")
	if !strings.Contains(assigned.Step.Run, `test '1.24' = 1.24 && test 'it'\''s me' = "it's me"`) || len(assigned.Memory) != 2 ||
		assigned.Memory[0].Scope != "family:nightly" || assigned.Memory[0].Seq != f.Refs.Seq {
		t.Fatalf("task.assigned of use: %+v", assigned)
	}

	plant := n.WaitRun(t, n.Submit(t, "plant.yaml", plantPlan), 30*time.Second)
	q, err := n.API.MemoryGet(ctx, "shared", "planted")
	if err != nil || !q.Quarantined || q.Reason == "" || q.Refs == nil || q.Refs.Run != plant.ID {
		t.Fatalf("planted fact = %+v, %v", q, err)
	}
	page, err := n.API.MemorySearch(ctx, api.MemorySearchRequest{Query: "planted"})
	if err != nil || page.Total != 0 {
		t.Fatalf("search without quarantined found the planted fact: %+v %v", page, err)
	}
	page, err = n.API.MemorySearch(ctx, api.MemorySearchRequest{Query: "planted 7f3a", Quarantined: true})
	if err != nil || page.Total != 1 || page.Items[0].Fact.Key != "planted" || !page.End {
		t.Fatalf("search with quarantined: %+v %v", page, err)
	}
	for _, c := range []struct {
		req  api.MemoryFactsRequest
		want string
	}{
		{api.MemoryFactsRequest{Tag: "infra"}, "family:nightly/nginx.version"},
		{api.MemoryFactsRequest{Quarantined: true}, "shared/planted"},
		{api.MemoryFactsRequest{Scope: "shared", Prefix: "gree"}, "shared/greeting"},
	} {
		p, err := n.API.MemoryFacts(ctx, c.req)
		if err != nil || len(p.Items) != 1 || p.Items[0].Scope+"/"+p.Items[0].Key != c.want || !p.End {
			t.Errorf("memory.facts %+v = %+v %v; want %s", c.req, p, err, c.want)
		}
	}

	read := n.WaitRun(t, n.Submit(t, "read.yaml", readPlan), 30*time.Second)
	steps := map[string]api.Step{}
	for _, st := range read.Steps {
		steps[st.ID] = st
	}
	for _, id := range []string{"use", "judge.planted"} {
		st := steps[id]
		if st.Status != "failed" || !strings.Contains(st.Error, "quarantined") || !strings.Contains(st.Error, "shared/planted") || !strings.Contains(st.Error, "quarantine release") {
			t.Errorf("step %s reading a quarantined fact: %s (%s)", id, st.Status, st.Error)
		}
	}
	if st := steps["judge.greeting"]; st.Status != "succeeded" {
		t.Errorf("judge.greeting: %s (%s)", st.Status, st.Error)
	}
	mu.Lock()
	seen := strings.Join(prompts, "\n")
	mu.Unlock()
	if strings.Contains(seen, "planted-7f3a") {
		t.Fatalf("a quarantined fact reached the model:\n%s", seen)
	}
	if !strings.Contains(seen, "the output is not it's me") {
		t.Fatalf("the clean fact did not reach the critique's prompt:\n%s", seen)
	}
	for _, run := range []string{learn.ID, read.ID} {
		rep, err := replay.Check(n.API.Events(ctx, 0, nil), replay.Options{Run: run})
		if err != nil || rep.Diverged() || rep.Reproduced != rep.Checked {
			b, _ := json.MarshalIndent(rep, "", "  ")
			t.Fatalf("replay of %s: %v\n%s", run, err, b)
		}
	}
}

// findAssigned returns the last task.assigned of step in run.
func findAssigned(t *testing.T, n *nodetest.Node, run, step string) event.TaskAssignedData {
	t.Helper()
	var out event.TaskAssignedData
	found := false
	for ev, err := range n.API.Events(context.Background(), 0, nil) {
		if err != nil {
			t.Fatal(err)
		}
		var d event.TaskAssignedData
		if ev.Type == event.TaskAssigned && ev.Run == run && ev.Decode(&d) == nil && d.Step.ID == step {
			out, found = d, true
		}
	}
	if !found {
		t.Fatalf("no task.assigned of %s/%s", run, step)
	}
	return out
}

// TestMemorySearchRepliesBounded: facts too large for one reply together
// come in several pages, each under NATS's max payload, none lost or
// repeated.
func TestMemorySearchRepliesBounded(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := nodetest.NewHistoryWriter(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const facts = 90
	big := strings.Repeat("bulk word ", 1500) // 15 KB
	if _, err := w.PublishFacts(ctx, n.JS, facts, func(i int) string { return big + strconv.Itoa(i) }); err != nil {
		t.Fatal(err)
	}
	if err := poll.Wait(20*time.Second, func() bool {
		p, err := n.API.MemorySearch(ctx, api.MemorySearchRequest{Query: "bulk", CursorRequest: api.CursorRequest{Limit: 1}})
		return err == nil && p.Total == facts
	}); err != nil {
		t.Fatal("the facts were not folded")
	}
	seen := map[string]bool{}
	pages, cursor := 0, ""
	for {
		p, err := n.API.MemorySearch(ctx, api.MemorySearchRequest{Query: "bulk", CursorRequest: api.CursorRequest{Cursor: cursor, Limit: api.MaxSearchPage}})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, h := range p.Items {
			if seen[h.Fact.Key] {
				t.Fatalf("page %d repeats %s", pages, h.Fact.Key)
			}
			seen[h.Fact.Key] = true
		}
		if p.End {
			break
		}
		if len(p.Items) == 0 || pages > facts {
			t.Fatalf("page %d: %d hits, not the end", pages, len(p.Items))
		}
		cursor = p.Next
	}
	if len(seen) != facts || pages < 2 {
		t.Fatalf("%d facts in %d pages, want %d in more than one", len(seen), pages, facts)
	}
}

// TestGateShowsTheResolvedCommand: the policy judges a step with its
// memory references resolved, and its gate shows that command and the
// values: a fact cannot hide what the policy gates.
func TestGateShowsTheResolvedCommand(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("name: gatekeeper\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n    action: confirm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := nodetest.Config(filepath.Join(dir, "node"))
	cfg.Policy = policyFile
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	put := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "wipe.flags", Value: "-rf"})
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, put); err != nil {
		t.Fatal(err)
	}
	if err := poll.Wait(10*time.Second, func() bool { _, err := n.API.MemoryGet(ctx, "shared", "wipe.flags"); return err == nil }); err != nil {
		t.Fatal("the fact never showed")
	}
	// Unresolved, the command holds no "rm -rf"; resolved, it does.
	run := submitGoal(t, n, "wipe", "goal: wipe\nsteps:\n  - id: wipe\n    run: rm ${memory:shared/wipe.flags} ./build\n")
	var gates []api.Gate
	poll.Eventually(t, 30*time.Second, "the step's gate is listed", func() bool {
		var err error
		gates, err = n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		return err == nil && len(gates) == 1
	})
	g := gates[0]
	if g.Verdict == nil || g.Verdict.Rule != "rm -rf" || g.Spec == nil || g.Spec.Run != "rm '-rf' ./build" {
		t.Fatalf("gate %+v (spec %+v)", g, g.Spec)
	}
}
