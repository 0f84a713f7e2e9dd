package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/config"
	"github.com/agentic-dev/agentic/internal/freeport"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/tracing"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestRunAcrossTwoExecutorsIsOneTrace: a run whose steps ran on two
// executor nodes (b and c) is one trace, exported by the orchestrator
// node: the run's root span, and one span per step attempt under it,
// each with the id derived from (run, step, attempt) and the node that
// ran it.
func TestRunAcrossTwoExecutorsIsOneTrace(t *testing.T) {
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
	exp := tracetest.NewInMemoryExporter()
	nodes := make([]*node.Node, len(cfgs))
	errs := make(chan error, len(cfgs))
	for i := range cfgs {
		n, err := node.New(cfgs[i], slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			n.UseTracer(tracing.New(exp, tracing.Options{Sync: true}))
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
	run := a.Submit(t, "chains.yaml", chainsPlan(4, 2, "echo ok"))
	r := a.WaitRun(t, run, 60*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	ranOn := map[string]string{} // step → node, as the run says
	for _, s := range r.Steps {
		ranOn[s.ID] = s.Node
	}

	spans := exp.GetSpans()
	var roots int
	attempts := map[string]int{} // span id → copies
	onNode := map[string]bool{}
	for _, s := range spans {
		if s.SpanContext.TraceID() != tracing.TraceID(run) {
			t.Errorf("span %s is in trace %s, want the run's %s", s.Name, s.SpanContext.TraceID(), tracing.TraceID(run))
		}
		switch {
		case s.Name == "run":
			roots++
			if s.Parent.IsValid() || s.SpanContext.SpanID() != tracing.RunSpanID(run) {
				t.Errorf("root span: parent %v, id %s", s.Parent, s.SpanContext.SpanID())
			}
		default:
			step := s.Name[len("step "):]
			attempts[step]++
			if s.Parent.SpanID() != tracing.RunSpanID(run) || s.SpanContext.SpanID() != tracing.AttemptSpanID(run, step, 1) {
				t.Errorf("span %s: parent %s, id %s", s.Name, s.Parent.SpanID(), s.SpanContext.SpanID())
			}
			var nodeAttr string
			for _, kv := range s.Attributes {
				if kv.Key == tracing.AttrNode {
					nodeAttr = kv.Value.AsString()
				}
			}
			if nodeAttr != ranOn[step] {
				t.Errorf("span %s says node %q, the run says %q", s.Name, nodeAttr, ranOn[step])
			}
			onNode[nodeAttr] = true
		}
	}
	if roots != 1 || len(attempts) != len(r.Steps) {
		t.Fatalf("%d root spans and attempt spans of %d steps, want 1 and %d: %v", roots, len(attempts), len(r.Steps), spans)
	}
	for step, n := range attempts {
		if n != 1 {
			t.Errorf("step %s has %d spans, want 1 (one attempt)", step, n)
		}
	}
	if !onNode["b"] || !onNode["c"] {
		t.Errorf("the attempts ran on %v, want both executors b and c", onNode)
	}
}
