package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go/jetstream"
)

// TestNodeDrainExits: a node.drain naming the node, published while a
// step runs, lets the step finish, then agentd stops cleanly, says why,
// and exits 0.
func TestNodeDrainExits(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	id := a.submit(testdata("drain.yaml"))
	poll.Eventually(t, 30*time.Second, "step slow running", func() bool {
		v, err := a.tryRunShow(id)
		if err != nil {
			return false
		}
		s, ok := v.lookup("slow")
		return ok && s.Status == "running" && a.workFileExists("slow.started")
	})
	op, _, err := trust.ReadCreds(a.creds())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := a.natsConn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, js, op, event.MustDraft(event.NodeDrain, "", event.NodeDrainData{Node: a.name, Reason: "e2e"})); err != nil {
		t.Fatal(err)
	}
	st := a.wait(30 * time.Second)
	if st == nil {
		t.Fatalf("agentd still running 30s after node.drain; log:\n%s", a.logTail(30))
	}
	if st.ExitCode() != 0 {
		t.Fatalf("agentd exited %d after node.drain, want 0; log:\n%s", st.ExitCode(), a.logTail(30))
	}
	if got := a.workFile("slow.done"); got != "done\n" {
		t.Fatalf("slow.done = %q: the running step did not finish before the node left", got)
	}
	if !strings.Contains(a.log(), "drained") {
		t.Fatalf("agentd did not log why it stopped; log:\n%s", a.logTail(30))
	}
	if a.workFileExists("after.done") {
		t.Fatal("step after started on a draining node")
	}
}
