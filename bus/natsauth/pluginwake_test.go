package natsauth_test

import (
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
)

// TestExecutorHearsPluginEvents: a lone executor may subscribe to the
// plugin events (they wake it to read the plugins in force) and receives
// an operator's plugin.added; it may still not subscribe to other events.
func TestExecutorHearsPluginEvents(t *testing.T) {
	cl := newCluster(t)
	orch := cl.connect(trust.KindNode, "orch-a", event.RoleOrchestrator)
	cl.streams(orch)
	ex := cl.connect(trust.KindNode, "exec-b", event.RoleExecutor)
	op := cl.connect(trust.KindOperator, "alice", trust.OperatorRole)
	got := make(chan *nats.Msg, 1)
	if _, err := ex.nc.ChanSubscribe(event.SubjectPrefix+"plugin.*", got); err != nil {
		t.Fatal(err)
	}
	if err := ex.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := ex.waitDenials(t, 0); len(d) > 0 {
		t.Fatalf("the executor's subscription to the plugin events was refused: %v", d)
	}
	if _, err := op.js.Publish(ctxT(t), event.Subject(event.PluginAdded, ""), []byte("x")); err != nil {
		t.Fatalf("operator publishes plugin.added: %v", err)
	}
	select {
	case m := <-got:
		if m.Subject != event.Subject(event.PluginAdded, "") {
			t.Fatalf("got %s", m.Subject)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the executor did not hear plugin.added")
	}
	if _, err := ex.nc.Subscribe(event.Subject(event.GoalSubmitted, ""), func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := ex.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := ex.waitDenials(t, 1); len(d) != 1 {
		t.Fatalf("want the subscription to goal.submitted refused, got %v", d)
	}
}
