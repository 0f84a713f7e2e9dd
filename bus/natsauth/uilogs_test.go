package natsauth_test

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go/jetstream"
)

// TestUINodeFollowsStepOutput: a ui node follows a step's output with an
// ordered consumer on AGENTIC_LOGS (the dashboard's live output), and
// only reads it: it may not write output. A node without the ui role (a
// planner) may not read it.
func TestUINodeFollowsStepOutput(t *testing.T) {
	cl := newCluster(t)
	exec := cl.connect(trust.KindNode, "exec-a", event.RoleExecutor)
	cl.streams(exec)
	ctx := ctxT(t)
	subject := bus.LogSubject("0190a3c2d4e5f6a70000000000000001", "build")
	if _, err := exec.js.Publish(ctx, subject, []byte("compiling\n")); err != nil {
		t.Fatalf("executor writes output: %v", err)
	}
	ui := cl.connect(trust.KindNode, "ui-a", event.RoleUI)
	oc, err := ui.js.OrderedConsumer(ctx, bus.LogsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, InactiveThreshold: 30 * time.Second})
	if err != nil {
		t.Fatalf("ui node's ordered consumer on %s: %v", bus.LogsStream, err)
	}
	m, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil || string(m.Data()) != "compiling\n" {
		t.Fatalf("ui node reads the step's output: %v", err)
	}
	_, err = ui.js.Publish(short(t), subject, []byte("forged output\n"))
	expectDenied(t, ui, "ui node writes output", subject, err)

	planner := cl.connect(trust.KindNode, "plan-a", event.RolePlanner)
	_, err = planner.js.OrderedConsumer(short(t), bus.LogsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err == nil {
		t.Fatal("a planner node made a consumer on the logs stream")
	}
}
