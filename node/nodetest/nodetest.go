// Package nodetest starts real agentic nodes inside a test process: every
// role, an embedded nats-server on a random loopback port, Pebble stores in
// t.TempDir(). It also gives tests an operator identity and API client.
package nodetest

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/planner/plan"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config returns a single-node configuration for tests, data in dir.
func Config(dir string) config.Config {
	cfg := config.Default()
	cfg.Data = dir
	cfg.Name = "test-node"
	cfg.NATSListen = "127.0.0.1:0"
	cfg.HTTPListen = "127.0.0.1:0"
	cfg.Executor.Slots = 8
	cfg.Executor.RunAs = strconv.Itoa(os.Geteuid()) // steps run as the test's user, root included
	return cfg
}

// Node is a started node with a client connection for the test.
type Node struct {
	*node.Node
	Dir      string
	NC       *nats.Conn
	JS       jetstream.JetStream
	API      *api.Client
	Operator *trust.Identity
	Root     *trust.Root
}

// Start starts a node with cfg (see Config) and stops it at cleanup.
func Start(t testing.TB, cfg config.Config) *Node {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return StartLogged(t, cfg, logger)
}

func (tn *Node) connect(t testing.TB) {
	t.Helper()
	opts, _, err := natsauth.CredsOptions(filepath.Join(tn.Dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(tn.NATSURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	op, root, err := trust.ReadCreds(filepath.Join(tn.Dir, trust.OperatorCredsFile))
	if err != nil {
		t.Fatal(err)
	}
	tn.NC, tn.JS, tn.Operator, tn.Root = nc, js, op, root
	// Answers are checked as agentctl checks them: signed by a node the
	// root issued, of a role that may give them.
	tn.API = api.NewClient(nc, 10*time.Second).WithTrust(&api.Trust{Verifier: envelope.NewVerifier(root), LearnRoots: true})
}

// Stop stops the node (idempotent).
func (tn *Node) Stop(t testing.TB) {
	t.Helper()
	if tn.NC != nil {
		tn.NC.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tn.Node.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// Submit publishes a goal.submitted for a plan file's content, signed by the
// operator, and returns the run id.
func (tn *Node) Submit(t testing.TB, name, planFile string) string {
	t.Helper()
	run := event.NewID()
	d := event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: name, PlanFile: planFile, PlanName: name})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, tn.JS, tn.Operator, d); err != nil {
		t.Fatal(err)
	}
	return run
}

// SubmitPlanned is Submit with the plan in the goal, parsed and in normal
// form next to the file, as agentctl goal submit -f sends it
// (GoalSubmittedData.Plan): the leader plans the run from the goal.
func (tn *Node) SubmitPlanned(t testing.TB, name, planFile string) string {
	t.Helper()
	p, err := plan.Parse(name, []byte(planFile))
	if err != nil {
		t.Fatal(err)
	}
	p.Goal = cmp.Or(p.Goal, name)
	run := event.NewID()
	d := event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: p.Goal, PlanFile: planFile, PlanName: name, Plan: p})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, tn.JS, tn.Operator, d); err != nil {
		t.Fatal(err)
	}
	return run
}

// WaitRun polls the run's summary until the run reaches a final status,
// then returns the whole run, every step read in pages.
func (tn *Node) WaitRun(t testing.TB, run string, timeout time.Duration) api.Run {
	t.Helper()
	var s *api.RunSummary
	var err error
	final := func() bool {
		s, err = tn.API.RunSummary(context.Background(), run)
		if err != nil {
			return false
		}
		switch s.Status {
		case event.RunSucceeded, event.RunFailed, event.RunCancelled:
			return true
		}
		return false
	}
	if werr := poll.Wait(timeout, final); werr != nil {
		t.Fatalf("run %s not finished after %s (last: %+v, err %v)", run, timeout, s, err)
	}
	r, err := tn.API.RunsGet(context.Background(), run)
	if err != nil {
		t.Fatalf("run %s finished (%s) but cannot be read: %v", run, s.Status, err)
	}
	return *r
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
