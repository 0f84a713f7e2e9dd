package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// benchNode is a full node (every role, embedded nats-server listening on
// a free loopback port, data in a temporary directory) and a client: its
// own NATS connection, the query API, and the operator identity the node
// created in DATA/operator.creds.
type benchNode struct {
	*node.Node
	nc  *nats.Conn
	js  jetstream.JetStream
	api *api.Client
	op  *trust.Identity
	// root verifies the node's events.
	root *trust.Root
}

// startNode starts a node with slots executor slots and waits until it is
// ready to run a plan: live, leader elected, and its executor known to the
// orchestrator. It is stopped at cleanup (or earlier by stop).
func startNode(tb testing.TB, slots int) *benchNode {
	tb.Helper()
	cfg := config.Default()
	cfg.Data = tb.TempDir()
	cfg.Name = "bench"
	cfg.NATSListen = "127.0.0.1:0"
	cfg.HTTPListen = "127.0.0.1:0"
	cfg.GossipListen = "127.0.0.1:0"
	cfg.Executor.Slots = slots
	n, err := node.New(cfg, logger())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		tb.Fatalf("start node: %v", err)
	}
	bn := &benchNode{Node: n}
	tb.Cleanup(bn.stop)
	bn.nc, err = nats.Connect(n.NATSURL(), nats.Name("bench-client"))
	if err != nil {
		tb.Fatalf("connect to %s: %v", n.NATSURL(), err)
	}
	if bn.js, err = jetstream.New(bn.nc); err != nil {
		tb.Fatal(err)
	}
	bn.api = api.NewClient(bn.nc, 10*time.Second)
	if bn.op, bn.root, err = trust.ReadCreds(filepath.Join(cfg.Data, trust.OperatorCredsFile)); err != nil {
		tb.Fatal(err)
	}
	bn.waitReady(tb, ctx)
	return bn
}

// waitReady polls until the node is ready and its ledger holds the
// leader's election and the executor's announcement.
func (bn *benchNode) waitReady(tb testing.TB, ctx context.Context) {
	tb.Helper()
	var seen []string
	var after uint64
	for {
		if bn.Ready() == nil {
			page, err := bn.api.Audit(ctx, api.AuditRequest{After: after, Wait: 100 * time.Millisecond})
			if err == nil {
				for _, l := range page.Lines {
					seen = append(seen, l.Type)
					after = l.Seq
				}
			}
			if slices.Contains(seen, string(event.LeaderElected)) && slices.Contains(seen, string(event.ExecutorOnline)) {
				return
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("node not ready (ready: %v; ledger types %v): %v", bn.Ready(), seen, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// submit publishes a goal.submitted for planFile signed by the operator
// and returns the run id.
func (bn *benchNode) submit(ctx context.Context, name, planFile string) (string, error) {
	run := event.NewID()
	d, err := event.NewDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: name, PlanFile: planFile, PlanName: name})
	if err != nil {
		return "", err
	}
	if err := bus.PublishSigned(ctx, bn.js, bn.op, d); err != nil {
		return "", fmt.Errorf("submit %s: %w", name, err)
	}
	return run, nil
}

// stop closes the client and stops the node; idempotent.
func (bn *benchNode) stop() {
	if bn.nc != nil {
		bn.nc.Close()
		bn.nc = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = bn.Stop(ctx)
}
