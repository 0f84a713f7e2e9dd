package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/internal/freeport"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// chainsPlan is a plan of chains of shell steps: each step starts only
// when the one before it succeeded, so the run keeps the executor, the
// orchestrator and the ledger busy for the length of the chains.
func chainsPlan(chains, length int, command string) string {
	var b strings.Builder
	b.WriteString("goal: chains\nsteps:\n")
	for c := range chains {
		for i := range length {
			fmt.Fprintf(&b, "  - id: c%d-%d\n    run: %q\n", c, i, command)
			if i > 0 {
				fmt.Fprintf(&b, "    depends_on: [c%d-%d]\n", c, i-1)
			}
		}
	}
	return b.String()
}

// taskCounts counts the task.started and task.finished events of a run by
// step, from the node's ledger.
func taskCounts(t *testing.T, n *nodetest.Node, run string) (started, finished map[string]int) {
	t.Helper()
	started, finished = map[string]int{}, map[string]int{}
	for line, err := range n.API.AuditLines(context.Background(), api.AuditRequest{Run: run}) {
		if err != nil {
			t.Fatalf("audit of run %s: %v", run, err)
		}
		var d struct {
			Step string `json:"step"`
		}
		switch line.Type {
		case string(event.TaskStarted):
			if err := json.Unmarshal(line.Data, &d); err != nil {
				t.Fatal(err)
			}
			started[d.Step]++
		case string(event.TaskFinished):
			if err := json.Unmarshal(line.Data, &d); err != nil {
				t.Fatal(err)
			}
			finished[d.Step]++
		}
	}
	return started, finished
}

// TestNodeSurvivesANATSServerRestart: a node on a three-server NATS
// cluster (R3 streams) runs plans while the server it is connected to is
// stopped and started again, twice (a fresh run each time, under way when
// the server stops). The node's connection moves to another server, the
// ledger follower and the executor's consumer resume, the run goes on
// while the server is down, and nothing is lost or run twice: every step
// succeeds on its first attempt, started and finished once, the ledger
// records no gap and verifies.
func TestNodeSurvivesANATSServerRestart(t *testing.T) {
	dir := t.TempDir()
	c := bustest.SecureCluster(t, 3, nodetest.NewRoot(t, dir))
	cfg := nodetest.Config(dir)
	cfg.NATS = c.URLs()
	n := nodetest.Start(t, cfg)

	const chains, length = 3, 12
	var runs []string
	// Twice: start a run, stop the server the node is on once the run is
	// under way, see the run go on without it, start the server again.
	// The second time the node is on another server, which the first
	// restart's server now serves alongside.
	for range 2 {
		run := n.Submit(t, "chains.yaml", chainsPlan(chains, length, "sleep 0.2"))
		runs = append(runs, run)
		var last string // what the run looked like when last asked
		succeeded := func() int {
			s, err := n.API.RunSummary(context.Background(), run)
			if err != nil {
				last = err.Error()
				return -1
			}
			last = fmt.Sprintf("%s, steps %v; node ready: %v", s.Status, s.StepCounts, n.Ready())
			return s.StepCounts["succeeded"]
		}
		poll.Eventually(t, 60*time.Second, "the run to be under way", func() bool { return succeeded() >= 1 })
		on := -1
		for i := range c.Len() {
			if c.URL(i) == n.NATSURL() {
				on = i
			}
		}
		if on < 0 {
			t.Fatalf("node on %s, not one of the cluster's servers %v", n.NATSURL(), c.URLs())
		}
		before := succeeded()
		c.Stop(on)
		if err := poll.Wait(60*time.Second, func() bool { return succeeded() >= before+3 }); err != nil {
			t.Fatalf("%v waiting for the run to go on while server %s is down (%d steps succeeded before; last: %s)", err, c.Name(on), before, last)
		}
		c.Start(on)
		c.WaitHealthy()
	}

	for _, run := range runs {
		r := n.WaitRun(t, run, 120*time.Second)
		if r.Status != event.RunSucceeded {
			t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
		}
		if len(r.Steps) != chains*length {
			t.Fatalf("%d steps, want %d", len(r.Steps), chains*length)
		}
		started, finished := taskCounts(t, n, run)
		for _, s := range r.Steps {
			if s.Status != "succeeded" || s.Attempt != 1 || started[s.ID] != 1 || finished[s.ID] != 1 {
				t.Errorf("run %s step %s: %s, attempt %d, started %d, finished %d times; want succeeded at the first attempt, started and finished once",
					run, s.ID, s.Status, s.Attempt, started[s.ID], finished[s.ID])
			}
		}
	}
	gaps := 0
	for line, err := range n.API.AuditLines(context.Background(), api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if line.Type == string(event.Gap) {
			gaps++
		}
	}
	if gaps != 0 {
		t.Errorf("the ledger recorded %d gaps in the stream", gaps)
	}
	v, err := n.API.LedgerVerify(context.Background())
	if err != nil || !v.OK {
		t.Errorf("ledger verify: %+v, %v", v, err)
	}
	if err := n.Ready(); err != nil {
		t.Errorf("node not ready after the restart: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{bus.EventsStream, bus.LogsStream} {
		s, err := n.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("%s: %d replicas, want 3", name, got)
		}
	}
}

// TestEmbeddedServersFormACluster: three agentd nodes, each with its
// embedded nats-server clustered with the others' (nats_cluster_listen,
// nats_routes), make one JetStream cluster: the streams and the leader
// bucket get three replicas, the ledger node finds no drift from the
// defaults (three replicas on a cluster), and a run submitted on one
// node's server is executed by the executor-only nodes on theirs.
func TestEmbeddedServersFormACluster(t *testing.T) {
	names := []string{"a", "b", "c"}
	dirs := make([]string, len(names))
	routes := make([]string, len(names))
	cfgs := make([]config.Config, len(names))
	for i, name := range names {
		dirs[i] = t.TempDir()
		cfgs[i] = nodetest.Config(dirs[i])
		cfgs[i].Name = name
		cfgs[i].NATSClusterListen = freeport.Addr(t)
		routes[i] = "nats://" + cfgs[i].NATSClusterListen
	}
	root, err := natsauth.InitRoot(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	cfgs[0].Roles = []string{event.RoleOrchestrator, event.RolePlanner, event.RoleMemory}
	for i := range cfgs {
		cfgs[i].NATSRoutes = routes
		if i > 0 {
			cfgs[i].Roles = []string{event.RoleExecutor}
			if _, err := natsauth.Enroll(dirs[i], root, cfgs[i].Name, cfgs[i].Roles, time.Hour, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each start waits for a majority of the embedded servers: start all
	// three at once, as three machines would be.
	nodes := make([]*node.Node, len(cfgs))
	errs := make(chan error, len(cfgs))
	for i := range cfgs {
		n, err := node.New(cfgs[i], slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := n.Stop(ctx); err != nil {
				t.Errorf("stop %s: %v", cfgs[i].Name, err)
			}
		})
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if err := n.Start(ctx); err != nil {
				errs <- fmt.Errorf("start %s: %w", cfgs[i].Name, err)
				return
			}
			errs <- nil
		}()
	}
	for range cfgs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	a := clientOf(t, nodes[0], dirs[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{bus.EventsStream, bus.LogsStream, "KV_" + bus.LeaderBucket} {
		s, err := a.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Config.Replicas; got != 3 {
			t.Errorf("%s: %d replicas, want 3", name, got)
		}
		if got := len(info.Cluster.Replicas) + 1; got != 3 {
			t.Errorf("%s: on %d servers (%+v), want 3", name, got, info.Cluster)
		}
	}
	var in settings.InForce
	poll.Eventually(t, 30*time.Second, "the ledger node to compare the streams with the settings", func() bool {
		return a.API.Call(ctx, settings.Method, struct{}{}, &in) == nil && !in.Checked.IsZero()
	})
	if in.Streams.Events.Replicas != 3 || in.Streams.Logs.Replicas != 3 || len(in.Drift) != 0 {
		t.Errorf("settings in force %+v, drift %+v; want the defaults with three replicas and no drift", in.Streams, in.Drift)
	}

	run := a.Submit(t, "chains.yaml", chainsPlan(4, 2, "echo ok"))
	r := a.WaitRun(t, run, 60*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	for _, s := range r.Steps {
		if s.Node != "b" && s.Node != "c" {
			t.Errorf("step %s ran on %q, want an executor node (b or c)", s.ID, s.Node)
		}
	}
}

// clientOf connects the test to a started node's NATS server as the
// operator of the node's data directory.
func clientOf(t *testing.T, n *node.Node, dir string) *nodetest.Node {
	t.Helper()
	opts, _, err := natsauth.CredsOptions(filepath.Join(dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(n.NATSURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	op, root, err := trust.ReadCreds(filepath.Join(dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	return &nodetest.Node{Node: n, Dir: dir, NC: nc, JS: js, API: api.NewClient(nc, 10*time.Second).WithTrust(&api.Trust{Verifier: envelope.NewVerifier(root), LearnRoots: true}), Operator: op, Root: root}
}
