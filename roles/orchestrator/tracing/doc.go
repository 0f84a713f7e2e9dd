// Package tracing exports the cluster's runs as OpenTelemetry traces: a
// run is a trace, each step attempt a span under the run's root span, a
// model call (a plan proposed, a critique judged) and a tool call child
// spans (GenAI semantic conventions, semconv v1.37.0). docs/telemetry.md
// shows the spans and their attributes.
//
// The spans are made from the ledger, not from timers in the roles: the
// leader orchestrator hands every event it folds to Tracer.Observe (one
// call site, roles/orchestrator's owner), and the tracer makes a span
// when an event completes one (task.finished, plan.proposed,
// critique.recorded, run.finished), with the start and end times the
// events recorded.
//
// Invariants:
//
//  1. Ids are derived, not drawn: the trace id from the run id (or the
//     submitter's traceparent, carried in the signed goal.submitted),
//     the root span id from the run, an attempt's span id from (run,
//     step, attempt). A restarted node or a new leader that exports a
//     span again exports the same ids, and a backend merges the two.
//  2. Only the leader exports, and only once live: a node that folds
//     without leading (a follower, a node catching up at start) keeps the
//     spans it made in a bounded backlog, and exports those that ended
//     within Backfill when it takes the lead — so a span is exported at
//     least once across a leader change. Replays (roles/orchestrator/
//     replay, agentctl run replay) never call the tracer and emit none.
//  3. Observe never blocks the fold: spans go to the SDK's batch
//     processor, which drops rather than waits when its queue is full.
//  4. Off costs nothing: FromEnv returns a nil *Tracer when no OTLP
//     endpoint is configured, and the orchestrator skips a nil tracer.
//
// Configuration is the standard OpenTelemetry environment:
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turn
// export on (OTLP/HTTP protobuf), OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the service, OTEL_EXPORTER_OTLP_HEADERS,
// _TIMEOUT and _COMPRESSION tune the exporter, OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn it off. Metrics stay Prometheus.
//
// Usage:
//
//	t, err := tracing.FromEnv(ctx, os.Getenv, "agentd", logger)
//	if err != nil { ... }
//	orchestrator.New(env, orchestrator.Config{Tracer: t, ...})
//	defer t.Stop(ctx)
package tracing
