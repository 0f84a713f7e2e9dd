package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/internal/freeport"
	"github.com/agentic-dev/agentic/ledger"
)

// triad is the cluster of the failover tests: three nats-server processes
// and three agentd processes on them, as deploy/docs/deploy.md lays out —
// a: orchestrator, planner, memory, ui; b: executor and a standby
// orchestrator; c: executor — joined by gossip with the fast preset.
type triad struct {
	nats    []*natsServer
	a, b, c *agentd
}

// member starts one agentd of the triad. a is started first and makes the
// root; the others are enrolled from it.
func (tr *triad) member(t *testing.T, n *agentd, name, roles string, join *agentd, extra ...string) *agentd {
	t.Helper()
	n.name = name
	n.natsURLs = natsURLs(tr.nats)
	gossip := "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	n.gossip = gossip
	n.extra = append([]string{"--roles", roles, "--nats", strings.Join(n.natsURLs, ","), "--gossip-listen", gossip}, extra...)
	if join != nil {
		n.extra = append(n.extra, "--join", join.gossip)
		n.enrolled, n.operatorCreds = true, join.creds()
		out := join.mustCtl("node", "enroll", name, "--roles", roles, "--root", join.data, "--out", n.data)
		if !strings.Contains(out, "enrolled node "+name) {
			t.Fatalf("node enroll printed:\n%s", out)
		}
	}
	n.start()
	n.waitReady()
	return n
}

// startTriad starts the cluster and waits until the leader (a) has seen
// both executors online.
func startTriad(t *testing.T) *triad {
	t.Helper()
	// a's data dir holds the cluster's root before anything starts: the
	// NATS servers trust it.
	a := newAgentd(t)
	if _, err := natsauth.InitRoot(a.data); err != nil {
		t.Fatal(err)
	}
	bundle, err := natsauth.LoadBundle(a.data)
	if err != nil {
		t.Fatal(err)
	}
	tr := &triad{nats: natsCluster(t, 3, bundle)}
	tr.a = tr.member(t, a, "a", "orchestrator,planner,memory,ui", nil)
	tr.b = tr.member(t, newAgentd(t), "b", "executor,orchestrator", tr.a, "--executor-slots", "2")
	tr.c = tr.member(t, newAgentd(t), "c", "executor", tr.a, "--executor-slots", "2")
	poll.Eventually(t, 30*time.Second, "executor.online from b and c, and a leading", func() bool {
		seen := map[string]bool{}
		for _, l := range tr.a.audit() {
			if l.Type == "executor.online" || l.Type == "leader.elected" {
				seen[l.Type+"/"+l.Node] = true
			}
		}
		return seen["executor.online/b"] && seen["executor.online/c"] && seen["leader.elected/a"]
	})
	return tr
}

// executor returns the triad's agentd named name.
func (tr *triad) node(name string) *agentd {
	for _, n := range []*agentd{tr.a, tr.b, tr.c} {
		if n.name == name {
			return n
		}
	}
	return nil
}

// other is the executor that is not x.
func (tr *triad) other(x *agentd) *agentd {
	if x == tr.b {
		return tr.c
	}
	return tr.b
}

// ledgerNodes are the triad's nodes that fold a ledger, and so answer
// the query API's queue group: a, and b for its standby orchestrator.
func (tr *triad) ledgerNodes() []*agentd { return []*agentd{tr.a, tr.b} }

// caughtUp waits until every ledger node has folded the stream as far as
// the furthest of them had when it was called: from then on, whichever of
// them answers a query answers with at least what any of them held. A
// node continued after SIGSTOP answers from its ledger while it reads
// what it missed (the query API promises no freshness), so a test reads
// through agentctl after a continue only once this holds.
func (tr *triad) caughtUp(t *testing.T, timeout time.Duration) {
	t.Helper()
	var want uint64
	poll.Eventually(t, timeout, "every ledger node's /metrics read", func() bool {
		want = 0
		for _, n := range tr.ledgerNodes() {
			seq, err := n.appliedStreamSeq()
			if err != nil {
				return false
			}
			want = max(want, seq)
		}
		return true
	})
	poll.Eventually(t, timeout, fmt.Sprintf("every ledger node at stream seq %d", want), func() bool {
		for _, n := range tr.ledgerNodes() {
			if seq, err := n.appliedStreamSeq(); err != nil || seq < want {
				return false
			}
		}
		return true
	})
}

// writePlan writes a plan file and returns its path.
func writePlan(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitStep polls until step of run id satisfies ok and returns it.
func waitStep(t *testing.T, via *agentd, id, step, what string, timeout time.Duration, ok func(stepView) bool) stepView {
	t.Helper()
	var got stepView
	poll.Eventually(t, timeout, what, func() bool {
		v, err := via.tryRunShow(id)
		if err != nil {
			return false
		}
		s, found := v.lookup(step)
		got = s
		return found && ok(s)
	})
	return got
}

// lines returns the non-empty lines of a file ("" if missing).
func lines(path string) []string {
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// successes counts the accepted task.finished events that report step
// succeeded, per step, in run id's audit.
func successes(t *testing.T, via *agentd, id string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, l := range via.audit("--run", id) {
		if l.Type == "task.finished" && strings.Contains(string(l.Data), `"status":"succeeded"`) {
			var step string
			if i := strings.Index(string(l.Data), `"step":"`); i >= 0 {
				rest := string(l.Data)[i+len(`"step":"`):]
				step = rest[:strings.IndexByte(rest, '"')]
			}
			n[step]++
		}
	}
	return n
}

// sameChains stops the ledger nodes given and checks their chains agree:
// the hash at the lower of their heads is the same in each.
func sameChains(t *testing.T, nodes ...*agentd) {
	t.Helper()
	var stores []*ledger.Store
	for _, n := range nodes {
		if n.running() {
			stopGracefully(t, n)
		}
		st, err := ledger.Open(filepath.Join(n.data, "ledger"), ledger.Options{})
		if err != nil {
			t.Fatalf("open %s's ledger: %v", n.name, err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	low, _ := stores[0].Head()
	for _, st := range stores[1:] {
		h, _ := st.Head()
		low = min(low, h)
	}
	first, err := stores[0].Get(low)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range stores[1:] {
		r, err := st.Get(low)
		if err != nil {
			t.Fatal(err)
		}
		if r.Hash != first.Hash {
			t.Fatalf("ledgers of %s and %s differ at seq %d", nodes[0].name, nodes[i+1].name, low)
		}
	}
}

// TestExecutorKilledStepFinishesElsewhere: kill -9 of the executor that
// runs an idempotent step → the leader records node.failed, the step runs
// again (attempt 2) on the other executor and succeeds; exactly one
// success is recorded, and the ledger nodes' chains agree.
func TestExecutorKilledStepFinishesElsewhere(t *testing.T) {
	requireE2E(t)
	tr := startTriad(t)
	marks := filepath.Join(t.TempDir(), "marks")
	id := tr.a.submit(writePlan(t, `goal: Survive an executor's death
steps:
  - id: long
    run: echo "$PWD" >> `+marks+`; sleep 3; echo done
    idempotent: true
`))
	s := waitStep(t, tr.a, id, "long", "step long running", 30*time.Second, func(s stepView) bool { return s.Status == "running" })
	x := tr.node(s.Node)
	if x == nil || x == tr.a {
		t.Fatalf("step long runs on %q, want b or c", s.Node)
	}
	x.kill9()
	v := tr.a.waitRun(id, 60*time.Second)
	if v.Status != "succeeded" {
		t.Fatalf("run after killing %s: %s", x.name, v.dump())
	}
	got := v.step(t, "long")
	if got.Node != tr.other(x).name || got.Attempt != 2 {
		t.Fatalf("step long: attempt %d on %q, want attempt 2 on %s:\n%s", got.Attempt, got.Node, tr.other(x).name, v.dump())
	}
	if n := successes(t, tr.a, id)["long"]; n != 1 {
		t.Fatalf("%d recorded successes of step long, want 1", n)
	}
	failed := false
	for _, l := range tr.a.audit() {
		if l.Type == "node.failed" && strings.Contains(string(l.Data), `"node":"`+x.name+`"`) {
			failed = true
		}
	}
	if !failed {
		t.Errorf("no node.failed for %s in the audit", x.name)
	}
	if m := lines(marks); len(m) != 2 {
		t.Errorf("step long started %d times (%v), want 2", len(m), m)
	}
	sameChains(t, tr.a, tr.b)
}

// TestNonIdempotentStepWaitsForDecision: the same with a step that is not
// idempotent → it goes to needs-decision and nothing runs it again until
// agentctl step retry; then it succeeds on the other executor.
func TestNonIdempotentStepWaitsForDecision(t *testing.T) {
	requireE2E(t)
	tr := startTriad(t)
	marks := filepath.Join(t.TempDir(), "marks")
	id := tr.a.submit(writePlan(t, `goal: Ask before running twice
steps:
  - id: once
    run: echo "$PWD" >> `+marks+`; sleep 3; echo done
`))
	s := waitStep(t, tr.a, id, "once", "step once running", 30*time.Second, func(s stepView) bool { return s.Status == "running" })
	x := tr.node(s.Node)
	x.kill9()
	waitStep(t, tr.a, id, "once", "step once in needs-decision", 30*time.Second, func(s stepView) bool { return s.Status == "needs-decision" })
	if m := lines(marks); len(m) != 1 {
		t.Fatalf("step once started %d times before any decision, want 1", len(m))
	}
	out := tr.a.mustCtl("step", "retry", id, "once", "--reason", "checked: safe to run again")
	if !strings.Contains(out, "once") {
		t.Errorf("step retry printed %q", out)
	}
	v := tr.a.waitRun(id, 60*time.Second)
	if v.Status != "succeeded" {
		t.Fatalf("run after retry: %s", v.dump())
	}
	if got := v.step(t, "once"); got.Node != tr.other(x).name {
		t.Fatalf("step once ran on %q after the retry, want %s", got.Node, tr.other(x).name)
	}
	// No second attempt was assigned before the operator decided.
	decided := uint64(0)
	for _, l := range tr.a.audit("--run", id) {
		switch l.Type {
		case "step.decided":
			decided = l.Seq
		case "task.assigned":
			if strings.Contains(string(l.Data), `"attempt":2`) && decided == 0 {
				t.Fatalf("attempt 2 assigned at seq %d before the operator's decision", l.Seq)
			}
		}
	}
	if decided == 0 {
		t.Fatal("no step.decided in the audit")
	}
	if m := lines(marks); len(m) != 2 {
		t.Errorf("step once started %d times, want 2 (one before the loss, one after the retry)", len(m))
	}
}

// TestLeaderKilledStandbyLeads: kill -9 of the leader orchestrator mid-run
// → the standby (b) leads with a newer epoch and the run finishes, every
// step started once and succeeding at its first attempt.
func TestLeaderKilledStandbyLeads(t *testing.T) {
	requireE2E(t)
	tr := startTriad(t)
	id := tr.a.submit(writePlan(t, `goal: Outlive the leader
steps:
  - id: s1
    run: sleep 1
  - id: s2
    run: sleep 1
    depends_on: [s1]
  - id: s3
    run: sleep 1
    depends_on: [s2]
  - id: s4
    run: "true"
    depends_on: [s3]
`))
	waitStep(t, tr.a, id, "s1", "step s1 done", 30*time.Second, func(s stepView) bool { return s.Status == "succeeded" })
	tr.a.kill9()
	v := tr.b.waitRun(id, 60*time.Second)
	if v.Status != "succeeded" {
		t.Fatalf("run after killing the leader: %s", v.dump())
	}
	for _, s := range v.Steps {
		if s.Attempt != 1 {
			t.Errorf("step %s at attempt %d, want 1: a decision was applied twice or lost", s.ID, s.Attempt)
		}
	}
	started := map[string]int{}
	var leaders []string
	for _, l := range tr.b.audit() {
		switch l.Type {
		case "task.started":
			if l.Run == id {
				started[string(l.Data)]++
			}
		case "leader.elected":
			leaders = append(leaders, l.Node)
		}
	}
	for k, n := range started {
		if n != 1 {
			t.Errorf("task.started %s recorded %d times", k, n)
		}
	}
	if len(leaders) < 2 || leaders[len(leaders)-1] != "b" {
		t.Errorf("leaders in order %v, want b last", leaders)
	}
}

// TestStoppedExecutorKillsSupersededAttempt: kill -STOP of the executor
// running a step, past the failure detection → the step is reassigned and
// succeeds on the other executor; after kill -CONT the stopped executor
// learns its attempt was superseded, kills the step's process, and its
// late result is recorded and ignored.
func TestStoppedExecutorKillsSupersededAttempt(t *testing.T) {
	requireE2E(t)
	tr := startTriad(t)
	pids := filepath.Join(t.TempDir(), "pids")
	// A step that is quick where the file "quick" exists (the executor
	// taking over) and long elsewhere (the one that will be stopped).
	id := tr.a.submit(writePlan(t, `goal: Supersede a frozen executor
steps:
  - id: slow
    run: echo $$ >> `+pids+`; if [ -f quick ]; then echo quick; else sleep 60; fi
    idempotent: true
`))
	s := waitStep(t, tr.a, id, "slow", "step slow running", 30*time.Second, func(s stepView) bool { return s.Status == "running" })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pids recorded: %q", lines(pids))
			t.Logf("a's own view of the run (GET /api/runs/%s/steps): %s", id, tr.a.httpGet("/api/runs/"+id+"/steps"))
		}
	})
	x := tr.node(s.Node)
	y := tr.other(x)
	if err := os.WriteFile(filepath.Join(y.work, "quick"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	x.signal(syscall.SIGSTOP)
	stoppedAt := time.Now()
	stopped := true
	defer func() {
		if stopped {
			x.signal(syscall.SIGCONT)
		}
	}()
	// While x is stopped the run is read from a's own ledger, not through
	// agentctl: x (when it is b) keeps its place in the query API's queue
	// group, and each request NATS hands it waits out agentctl's timeout.
	v := tr.a.waitOwnRun(id, 60*time.Second)
	t.Logf("%s stopped; the run finished in a's ledger %v later", x.name, time.Since(stoppedAt).Round(time.Millisecond))
	if got := v.step(t, "slow"); v.Status != "succeeded" || got.Node != y.name || got.Attempt != 2 {
		t.Fatalf("run while %s is stopped: %s", x.name, v.dump())
	}
	first := lines(pids)
	if len(first) == 0 {
		t.Fatal("no pid recorded by the first attempt")
	}
	pid, err := strconv.Atoi(first[0])
	if err != nil {
		t.Fatal(err)
	}
	if !processLive(pid) {
		t.Fatalf("the superseded attempt's process %d ended before %s was continued", pid, x.name)
	}
	x.signal(syscall.SIGCONT)
	stopped = false
	poll.Eventually(t, 30*time.Second, "the superseded attempt's process killed", func() bool { return !processLive(pid) })
	// x, continued, answers queries from a ledger that has not yet read
	// what it missed: agentctl reads once every ledger node has caught up.
	tr.caughtUp(t, 30*time.Second)
	poll.Eventually(t, 30*time.Second, "the late result of attempt 1 recorded", func() bool {
		for _, l := range tr.a.audit("--run", id) {
			if l.Type == "task.finished" && l.Node == x.name && strings.Contains(string(l.Data), `"attempt":1`) {
				return true
			}
		}
		return false
	})
	tr.caughtUp(t, 30*time.Second) // past the late result, wherever it was read
	v = tr.a.runShow(id)
	if got := v.step(t, "slow"); v.Status != "succeeded" || got.Attempt != 2 || got.Node != y.name {
		t.Fatalf("the late result changed the run: %s", v.dump())
	}
	if n := successes(t, tr.a, id)["slow"]; n != 1 {
		t.Fatalf("%d recorded successes of step slow, want 1", n)
	}
}

// TestNATSServerRestartUnderLoad: one of the three NATS servers is killed
// and restarted while a run's steps go through → nothing is lost: every
// step succeeds once, and the ledger verifies.
func TestNATSServerRestartUnderLoad(t *testing.T) {
	requireE2E(t)
	tr := startTriad(t)
	var b strings.Builder
	b.WriteString("goal: Ride out a NATS server restart\nsteps:\n")
	const n = 24
	for i := 1; i <= n; i++ {
		b.WriteString("  - id: s" + strconv.Itoa(i) + "\n    run: sleep 0.2\n")
	}
	id := tr.a.submit(writePlan(t, b.String()))
	waitStep(t, tr.a, id, "s2", "the run under way", 30*time.Second, func(s stepView) bool { return s.Status == "succeeded" })
	victim := tr.nats[1]
	victim.kill9()
	victim.start()
	if !victim.waitHealthy() {
		t.Fatalf("nats-server %s exited when restarted on its ports:\n%s", victim.name, tailFile(victim.logPath, 10))
	}
	v := tr.a.waitRun(id, 90*time.Second)
	if v.Status != "succeeded" || len(v.Steps) != n {
		t.Fatalf("run across a NATS server restart: %s", v.dump())
	}
	for step, k := range successes(t, tr.a, id) {
		if k != 1 {
			t.Errorf("step %s: %d recorded successes", step, k)
		}
	}
	if got := slices.Collect(func(yield func(string) bool) {
		for _, s := range v.Steps {
			if s.Status != "succeeded" && !yield(s.ID) {
				return
			}
		}
	}); len(got) > 0 {
		t.Errorf("steps not succeeded: %v", got)
	}
	tr.a.verifyLedger()
	sameChains(t, tr.a, tr.b)
}
