package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/node/api"
)

func fixtureNodes() []api.NodeSummary {
	used, skew := 2, -300*time.Millisecond
	now := time.Now()
	return []api.NodeSummary{
		{Name: "c", Roles: []string{"executor"}, Capabilities: []string{}, Slots: 2, State: "dead", Since: now.Add(-12 * time.Second), Version: "v0.7.0", Recorded: "dead"},
		{Name: "a", Roles: []string{"orchestrator", "planner"}, Capabilities: []string{}, State: "alive", Since: now.Add(-5 * time.Minute), Leader: true, Epoch: 7, Version: "v0.7.0"},
		{Name: "b", Roles: []string{"executor", "orchestrator"}, Capabilities: []string{"docker"}, Slots: 4, SlotsUsed: &used, State: "alive",
			Since: now.Add(-3 * time.Minute), Version: "v0.7.0", Draining: true, ClockSkew: &skew},
	}
}

func TestNodeLs(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.nodes, f.leader, f.epoch = fixtureNodes(), "a", 7 })
	// a and b answer node.info (c is dead): a is ready, b is not.
	h.withPeer(t, api.NodeInfo{ID: "a", Ready: true, Checks: []health.Status{{Name: "jetstream", OK: true, Blocking: true}}})
	h.withPeer(t, api.NodeInfo{ID: "b", NotReady: "ledger: catching up with the stream",
		Checks: []health.Status{{Name: "ledger", Blocking: true, Reason: "catching up with the stream"}}})

	r := h.run("node", "ls")
	if r.code != 0 {
		t.Fatalf("node ls = %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^NAME\s+ROLES\s+CAPABILITIES\s+SLOTS\s+STATE\s+SINCE\s+VERSION\s+SKEW\s+READY$`),
		regexp.MustCompile(`^a \*\s+orchestrator,planner\s+-\s+-\s+alive\s+5m0s\s+v0.7.0\s+-\s+yes$`),
		regexp.MustCompile(`^b\s+executor,orchestrator\s+docker\s+2/4\s+alive,draining\s+3m0s\s+v0.7.0\s+-0.3s\s+no: ledger: catching up with the stream$`),
		regexp.MustCompile(`^c\s+executor\s+-\s+-/2\s+dead\s+12s\s+v0.7.0\s+-\s+-$`),
		regexp.MustCompile(`^\* leader a, epoch 7  \(answered by node-a; gossip 10.0.0.1:7946\)$`),
	}
	if len(lines) != len(want) {
		t.Fatalf("node ls printed\n%s", r.stdout)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
	// Two nodes a page: one listing of two pages.
	h.node.with(func(f *fakeNode) {
		if f.nodesCalls != 1 || f.nodesPages != 2 {
			t.Errorf("%d listings, %d pages", f.nodesCalls, f.nodesPages)
		}
	})

	r = h.run("node", "ls", "-o", "json")
	var got []api.NodeSummary
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("node ls -o json = %+v (%v)", r, err)
	}
	if len(got) != 3 || got[0].Name != "a" || !got[0].Leader || got[0].Epoch != 7 || *got[1].SlotsUsed != 2 || *got[1].ClockSkew != -300*time.Millisecond {
		t.Errorf("json %+v", got)
	}
	if got[0].Ready == nil || !*got[0].Ready || got[1].Ready == nil || *got[1].Ready || got[2].Ready != nil ||
		len(got[1].Checks) != 1 || got[1].Checks[0].Reason != "catching up with the stream" || got[1].NotReady == "" {
		t.Errorf("json readiness: %+v", got)
	}
	r = h.run("node", "ls", "-o", "jsonl")
	if n := strings.Count(r.stdout, "\n"); r.code != 0 || n != 3 {
		t.Errorf("jsonl: %d lines: %+v", n, r)
	}
}

func TestNodeLsWithoutANode(t *testing.T) {
	h := newHarness(t)
	r := h.run("node", "ls")
	if r.code != ExitError || !strings.Contains(r.stderr, "no agentd node answers agentic.api.nodes.list") {
		t.Errorf("node ls without a node = %+v", r)
	}
}

func TestNodeDrain(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) { f.nodes, f.leader, f.epoch = fixtureNodes(), "a", 7 })

	r := h.run("node", "drain", "b", "--reason", "kernel upgrade")
	if r.code != 0 || !strings.Contains(r.stdout, "drain requested for node b (event ") {
		t.Fatalf("node drain = %+v", r)
	}
	evs := h.events()
	if len(evs) != 1 || evs[0].Type != event.NodeDrain || evs[0].Signer.ID != "alice" {
		t.Fatalf("published %+v", evs)
	}
	var d event.NodeDrainData
	if err := json.Unmarshal(evs[0].Events[0].Data, &d); err != nil || d != (event.NodeDrainData{Node: "b", Reason: "kernel upgrade"}) {
		t.Errorf("drain event data %s (%v)", evs[0].Events[0].Data, err)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"node", "drain", "zz"}, ExitError, `no node "zz" in the cluster`},
		{[]string{"node", "drain", "c"}, ExitError, "node c is dead: nothing to drain"},
		{[]string{"node", "drain"}, ExitUsage, "accepts 1 arg"},
		{[]string{"node", "drain", "b", "--wait-timeout", "0s"}, ExitUsage, "--wait-timeout must be positive"},
	} {
		r := h.run(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v = %+v, want exit %d saying %q", tc.args, r, tc.code, tc.want)
		}
	}
	if n := len(h.events()); n != 1 {
		t.Errorf("%d events after refused drains, want 1", n)
	}
}

func TestNodeDrainWait(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) {
		f.nodes, f.leader, f.epoch = fixtureNodes(), "a", 7
		f.nodesChange = func(f *fakeNode, call int) {
			b := &f.nodes[2]
			switch call {
			case 3: // the drain is seen, one step left
				one := 1
				b.Draining, b.SlotsUsed = true, &one
			case 5:
				b.State = "left"
			}
		}
	})
	r := h.run("node", "drain", "b", "--wait")
	if r.code != 0 {
		t.Fatalf("drain --wait = %+v", r)
	}
	out := r.stdout
	for _, w := range []string{"drain requested for node b", "node b: alive,draining, slots 2/4", "node b: alive,draining, slots 1/4", "node b: left, slots 1/4", "node b drained and left"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// One line per change, not per poll.
	if n := strings.Count(out, "node b: alive,draining, slots 1/4"); n != 1 {
		t.Errorf("the same progress printed %d times:\n%s", n, out)
	}

	// -o json prints the result once the node has left.
	h.node.with(func(f *fakeNode) { f.nodes, f.nodesCalls = fixtureNodes(), 0 })
	r = h.run("node", "drain", "b", "--wait", "-o", "json")
	var res drainResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Node != "b" || res.State != "left" || res.Event == "" {
		t.Errorf("drain --wait -o json = %+v (%v)", r, err)
	}
}

func TestNodeDrainWaitFails(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.with(func(f *fakeNode) {
		f.nodes = fixtureNodes()
		f.nodesChange = func(f *fakeNode, call int) {
			if call == 3 {
				f.nodes[2].State = "dead"
			}
		}
	})
	r := h.run("node", "drain", "b", "--wait")
	if r.code != ExitError || !strings.Contains(r.stderr, "node b was lost (dead) while draining") {
		t.Errorf("drain --wait, node lost = %+v", r)
	}

	h.node.with(func(f *fakeNode) { f.nodes, f.nodesChange = fixtureNodes(), nil })
	r = h.run("node", "drain", "b", "--wait", "--wait-timeout", "500ms")
	if r.code != ExitError || !strings.Contains(r.stderr, "node b has not left after 500ms") || !strings.Contains(r.stderr, "hint: ") {
		t.Errorf("drain --wait, timeout = %+v", r)
	}
}

// Against a real node: node ls lists it from its ledger, and a drain is
// recorded and shown.
func TestNodeLsAndDrainOnARealNode(t *testing.T) {
	h, _ := nodeHarness(t)
	var rows []api.NodeSummary
	poll.Eventually(t, 30*time.Second, "node ls to show the node alive, leading, with its executor's slots", func() bool {
		r := h.run("node", "ls", "-o", "json")
		rows = nil
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rows) != nil || len(rows) != 1 {
			return false
		}
		return rows[0].Name == "test-node" && rows[0].State == "alive" && rows[0].Leader && rows[0].Epoch > 0 && rows[0].Slots == 8
	})
	r := h.run("node", "ls")
	if r.code != 0 || !regexp.MustCompile(`(?m)^test-node \*\s+orchestrator,planner,executor,memory,ui\s+-\s+0/8\s+alive\s`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "no gossip: states from the ledger") {
		t.Errorf("node ls =\n%s%s", r.stdout, r.stderr)
	}
	if r := h.run("node", "drain", "test-node", "--reason", "maintenance"); r.code != 0 {
		t.Fatalf("drain = %+v", r)
	}
	poll.Eventually(t, 30*time.Second, "node ls to show the node draining", func() bool {
		r := h.run("node", "ls", "-o", "json")
		return json.Unmarshal([]byte(r.stdout), &rows) == nil && len(rows) == 1 && rows[0].Draining && rows[0].DrainReason == "maintenance"
	})
}

func TestAlarmLs(t *testing.T) {
	h := newHarness(t).withNode()
	r := h.run("alarm", "ls")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "no alarms in force" {
		t.Fatalf("alarm ls with none = %+v", r)
	}
	now := time.Now()
	h.node.with(func(f *fakeNode) {
		f.alarms = []api.Alarm{
			{Node: "a", Alarm: event.AlarmClockSkew, Check: "clock", Reason: "clock 40s ahead of the stream's", Since: now.Add(-2 * time.Minute), Raised: now, Seq: 9},
			{Node: "b", Alarm: event.AlarmCorrupt, Check: "ledger", Raised: now.Add(-time.Minute), Seq: 12},
			{Node: "b", Alarm: event.AlarmNoSpace, Check: "disk", Reason: "2 MB free", Since: now.Add(-30 * time.Second), Raised: now, Seq: 14},
		}
	})
	r = h.run("alarm", "ls")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^NODE\s+ALARM\s+CHECK\s+SINCE\s+REASON$`),
		regexp.MustCompile(`^a\s+CLOCK_SKEW\s+clock\s+2m0s\s+clock 40s ahead of the stream's$`),
		regexp.MustCompile(`^b\s+CORRUPT\s+ledger\s+1m0s\s+-$`),
		regexp.MustCompile(`^b\s+NOSPACE\s+disk\s+30s\s+2 MB free$`),
	}
	if r.code != 0 || len(lines) != len(want) {
		t.Fatalf("alarm ls = %+v", r)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
	r = h.run("alarm", "ls", "-o", "json")
	var got []api.Alarm
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("alarm ls -o json = %+v (%v)", r, err)
	}
	if len(got) != 3 || got[2].Node != "b" || got[2].Alarm != event.AlarmNoSpace || got[2].Seq != 14 || got[0].Reason == "" {
		t.Errorf("json %+v", got)
	}
}
