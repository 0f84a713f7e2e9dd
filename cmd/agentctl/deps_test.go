package main

import (
	"os/exec"
	"strings"
	"testing"
)

// heavyForACLI are packages agentctl must not link: each costs every
// invocation its start-up (package initialisation: the JSON-schema
// compiler and the model client ~10 ms, the OpenTelemetry SDK and
// protobuf registries more) and none is a CLI's to use — the CLI reads
// wire types, never runs a model, a tracer or a leader's loop.
var heavyForACLI = []string{
	"github.com/agentic-dev/agentic/roles/planner/llm",
	"github.com/agentic-dev/agentic/roles/improve",      // the loop; its wire types are roles/improve/tuning
	"github.com/agentic-dev/agentic/roles/orchestrator", // the leader; its view types are roles/orchestrator/core
	"github.com/agentic-dev/agentic/roles/orchestrator/tracing",
	"github.com/openai/openai-go/v3",
	"github.com/santhosh-tekuri/jsonschema/v6",
	"go.opentelemetry.io/otel/sdk/trace",
	// The embedded server (bus/embedded) and the ledger's Pebble, with
	// Prometheus, Sentry and protobuf behind it: ~3 ms of initialisation
	// and half the binary. agentctl talks to servers over the network and
	// verifies exports through agentd (ledger/history).
	"github.com/nats-io/nats-server/v2/server",
	"github.com/cockroachdb/pebble/v2",
	"github.com/prometheus/client_golang/prometheus",
	"github.com/agentic-dev/agentic/bus/embedded",
	"github.com/agentic-dev/agentic/ledger",
}

// TestAgentctlLinksNoServerSide: agentctl's dependencies hold none of
// heavyForACLI (a command that imported one of them made every agentctl
// invocation ~13 ms slower to start).
func TestAgentctlLinksNoServerSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	for _, h := range heavyForACLI {
		if deps[h] {
			t.Errorf("agentctl links %s: import its wire or view types from a lighter package instead", h)
		}
	}
}
