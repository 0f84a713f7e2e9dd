package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// benchNode is a full node (every role, embedded nats-server listening on
// a free loopback port, data in a temporary directory) and a client: its
// NATS connection (the test harness's, which may watch every event subject), the query API, and the operator identity the node
// created in DATA/operator.creds — nodetest's node, with short names.
type benchNode struct {
	*nodetest.Node
	nc   *nats.Conn
	js   jetstream.JetStream
	api  *api.Client
	op   *trust.Identity
	root *trust.Root // verifies the node's events
}

// startNode starts a node with slots executor slots and waits until it is
// ready to run a plan: live, leader elected, and its executor known to the
// orchestrator. It is stopped at cleanup.
func startNode(tb testing.TB, slots int) *benchNode {
	tb.Helper()
	cfg := nodetest.Config(tb.TempDir())
	cfg.Name = "bench"
	cfg.Executor.Slots = slots
	tn := nodetest.Start(tb, cfg)
	// The benchmarks watch the event subjects as they pass, which only
	// the test harness may subscribe to (no agentic identity may, outside
	// JetStream): nc is the harness's connection.
	issuer, err := trust.LoadRoot(tn.Dir)
	if err != nil {
		tb.Fatal(err)
	}
	watch := bustest.Harness(tb, bus.ConnConfig{URLs: []string{tn.NATSURL()}, Name: "bench-watch"}, issuer)
	bn := &benchNode{Node: tn, nc: watch.NC, js: tn.JS, api: tn.API, op: tn.Operator, root: tn.Root}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bn.waitReady(tb, ctx)
	return bn
}

// waitReady polls until the node is ready and its ledger holds the
// leader's election and the executor's announcement.
func (bn *benchNode) waitReady(tb testing.TB, ctx context.Context) {
	tb.Helper()
	var seen []string
	var after uint64
	err := poll.WaitContext(ctx, func() bool {
		if bn.Ready() != nil {
			return false
		}
		page, err := bn.api.Audit(ctx, api.AuditRequest{After: after, Wait: 100 * time.Millisecond})
		if err == nil {
			for _, l := range page.Items {
				seen = append(seen, l.Type)
				after = l.Seq
			}
		}
		return slices.Contains(seen, string(event.LeaderElected)) && slices.Contains(seen, string(event.ExecutorOnline))
	})
	if err != nil {
		tb.Fatalf("node not ready (ready: %v; ledger types %v): %v", bn.Ready(), seen, err)
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
