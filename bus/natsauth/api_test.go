package natsauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestQueryAPIUnderPermissions: the query API's server and client
// (node/api) work as they are under these permissions — a node serves on
// the queue group, on its own subject and on the broadcast one; a viewer
// calls, asks one node and gathers, each reply in its own inbox — and a
// viewer reads step output as agentctl run logs does.
func TestQueryAPIUnderPermissions(t *testing.T) {
	cl := newCluster(t)
	node := cl.connect(trust.KindNode, "ledger-a", event.RoleMemory)
	cl.streams(node)
	srv := api.NewServer(node.nc, "ledger-a", nil)
	api.HandleTyped(srv, api.MethodNodeInfo, func(context.Context, struct{}) (api.NodeInfo, error) {
		return api.NodeInfo{ID: "ledger-a"}, nil
	})
	api.HandleTyped(srv, api.MethodLedgerHead, func(context.Context, struct{}) (map[string]int, error) {
		return map[string]int{"seq": 7}, nil
	})
	srv.Broadcast(api.MethodLedgerHead)
	if err := srv.Start(); err != nil {
		t.Fatalf("a node serves the query API: %v", err)
	}
	defer srv.Stop()
	if err := node.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := node.denialList(); len(d) > 0 {
		t.Fatalf("the node's query subscriptions were refused: %v", d)
	}

	v := cl.connect(trust.KindOperator, "auditor", natsauth.RoleViewer)
	ctx := ctxT(t)
	c := api.NewClient(v.nc, 5*time.Second)
	var info api.NodeInfo
	if err := c.Call(ctx, api.MethodNodeInfo, struct{}{}, &info); err != nil || info.ID != "ledger-a" {
		t.Fatalf("viewer calls node.info: %+v %v", info, err)
	}
	info = api.NodeInfo{}
	if err := c.At("ledger-a").Call(ctx, api.MethodNodeInfo, struct{}{}, &info); err != nil || info.ID != "ledger-a" {
		t.Fatalf("viewer asks one node: %+v %v", info, err)
	}
	answers, err := api.GatherFrom[map[string]int](ctx, c, api.MethodLedgerHead, struct{}{}, 5*time.Second, []string{"ledger-a"})
	if err != nil || len(answers) != 1 || answers[0].Data["seq"] != 7 {
		t.Fatalf("viewer gathers ledger.head: %+v %v", answers, err)
	}

	// Step output, as agentctl run logs reads it.
	ex := cl.connect(trust.KindNode, "exec-b", event.RoleExecutor)
	if _, err := ex.js.Publish(ctx, bus.LogSubject("run1", "s1"), []byte("line")); err != nil {
		t.Fatal(err)
	}
	logs, err := v.js.Stream(ctx, bus.LogsStream)
	if err != nil {
		t.Fatalf("viewer reads the logs stream's info: %v", err)
	}
	if _, err := logs.GetLastMsgForSubject(ctx, bus.LogSubject("run1", "s1")); err != nil {
		t.Fatalf("viewer reads the last output chunk: %v", err)
	}
	oc, err := logs.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.LogSubject("run1", "s1")}})
	if err != nil {
		t.Fatalf("viewer follows step output: %v", err)
	}
	if _, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil {
		t.Fatalf("viewer reads step output: %v", err)
	}
}

// TestOnlyAnsweringRolesServeQueries: a node whose roles do not answer the
// cluster's queries (a lone executor) may not subscribe to a query
// method, its queue group or another method's broadcast — the stolen
// executor credential that stood between agentctl and the ledger — while
// it still answers on its own subject and says what it is on the
// broadcast one.
func TestOnlyAnsweringRolesServeQueries(t *testing.T) {
	cl := newCluster(t)
	for _, role := range []string{event.RoleExecutor} {
		ex := cl.connect(trust.KindNode, "x-"+role, role)
		for _, subj := range []string{"agentic.api.gates.list", "agentic.api.runs.get", "agentic.api.>", "agentic.api.all.ledger.head", "agentic.api.at.ledger-a.gates.list"} {
			if _, err := ex.nc.QueueSubscribe(subj, api.QueueGroup, func(*nats.Msg) {}); err != nil {
				t.Fatal(err)
			}
		}
		if err := ex.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		denied := ex.waitDenials(t, 5)
		if len(denied) != 5 {
			t.Fatalf("%s: want 5 refused subscriptions, got %v", role, denied)
		}
		srv := api.NewServer(ex.nc, "x-"+role, nil)
		api.HandleTyped(srv, api.MethodNodeInfo, func(context.Context, struct{}) (api.NodeInfo, error) {
			return api.NodeInfo{ID: "x-" + role}, nil
		})
		srv.Broadcast(api.MethodNodeInfo)
		srv.SelfOnly()
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		if err := ex.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if d := ex.waitDenials(t, 0); len(d) > len(denied) {
			t.Fatalf("%s: its own subjects were refused: %v", role, d[len(denied):])
		}
		srv.Stop()
	}
}

// waitDenials waits until at least n permission violations were reported
// on c (a moment more when n is 0) and returns them all.
func (c *client) waitDenials(t *testing.T, n int) []string {
	t.Helper()
	if n == 0 {
		// Nothing to wait for: a round trip to the server after the
		// subscriptions, which the server answers after judging them.
		if err := c.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return c.denialList()
	}
	_ = poll.Wait(3*time.Second, func() bool { return len(c.denialList()) >= n })
	return c.denialList()
}
