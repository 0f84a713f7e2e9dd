package node

import (
	"context"
	"os"

	"github.com/agentic-dev/agentic/roles/orchestrator/tracing"
)

// tracerRole ends the orchestrator's tracer with the node: listed among
// the roles before the orchestrator, it is stopped after it, so that the
// spans of the last events folded are exported (package tracing).
type tracerRole struct{ t *tracing.Tracer }

func (tracerRole) Name() string                     { return "tracing" }
func (tracerRole) Start(context.Context) error      { return nil }
func (r tracerRole) Stop(ctx context.Context) error { return r.t.Stop(ctx) }

// UseTracer makes t the orchestrator's tracer instead of the one the
// environment configures (an in-memory exporter's, in tests). Call it
// before Start; the node stops t with itself.
func (n *Node) UseTracer(t *tracing.Tracer) { n.tracer = t }

// newTracer is the orchestrator's tracer: UseTracer's, else the one the
// OpenTelemetry environment of the process configures
// (OTEL_EXPORTER_OTLP_ENDPOINT, …), or nil when it configures no trace
// export: then tracing costs nothing.
func (n *Node) newTracer(ctx context.Context) (*tracing.Tracer, error) {
	if n.tracer != nil {
		n.roles = append(n.roles, tracerRole{n.tracer})
		return n.tracer, nil
	}
	t, err := tracing.FromEnv(ctx, os.Getenv, "agentd", n.log)
	if err != nil || t == nil {
		return nil, err
	}
	n.log.Info("tracing: exporting the runs' traces over OTLP/HTTP",
		"endpoint", firstSet(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
	n.roles = append(n.roles, tracerRole{t})
	return t, nil
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
