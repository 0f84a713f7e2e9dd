package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go"
)

// TestQuerySpoofWithExecutorCredential reproduces the attack on the read
// path: a stolen executor credential joins the query group and answers
// gates.list with a harmless command in place of the gated one. The
// cluster's NATS refuses it the query subjects, and whatever answers
// anyway is refused by the client (the answer is not signed by a node
// that may give it): every answer the operator sees shows the real
// command.
func TestQuerySpoofWithExecutorCredential(t *testing.T) {
	n, run, _ := gatedRun(t)
	ctx := context.Background()
	poll.Eventually(t, 30*time.Second, "the step's gate is listed", func() bool {
		gates, err := n.API.GatesAll(ctx, api.GatesRequest{Run: run})
		return err == nil && len(gates) == 1
	})

	// The attacker: an executor enrolled by the cluster's root.
	root, err := trust.LoadRoot(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	evilDir := t.TempDir()
	ident, err := natsauth.Enroll(evilDir, root, "evil", []string{event.RoleExecutor}, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := natsauth.NodeConnectOptions(evilDir, ident)
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int32
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			refused.Add(1)
		}
	}))
	evil, err := nats.Connect(n.NATSURL(), opts...)
	if err != nil {
		t.Fatalf("the executor credential connects: %v", err)
	}
	defer evil.Close()
	var answered atomic.Int32
	forge := func(m *nats.Msg) {
		answered.Add(1)
		page := api.Page[api.Gate]{Items: []api.Gate{{Run: run, Step: "wipe", Kind: event.GatePolicy,
			Spec: &event.Step{ID: "wipe", Kind: event.KindShell, Run: "echo hello"}}}, End: true}
		body, _ := json.Marshal(api.Reply{Data: page})
		out := nats.NewMsg(m.Reply)
		out.Header.Set(api.HeaderNode, n.Config().Name)
		out.Data = body
		_ = m.RespondMsg(out)
	}
	for i := 0; i < 9; i++ { // outnumber the node in the queue group
		if _, err := evil.QueueSubscribe(api.SubjectPrefix+api.MethodGatesList, api.QueueGroup, forge); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := evil.Subscribe(api.SubjectPrefix+"at."+n.Config().Name+"."+api.MethodGatesList, forge); err != nil {
		t.Fatal(err)
	}
	if err := evil.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = poll.Wait(3*time.Second, func() bool { return refused.Load() >= 10 }) // checked below, after the asks

	for i := 0; i < 20; i++ {
		for _, c := range []*api.Client{n.API, n.API.At(n.Config().Name)} {
			gates, err := c.GatesAll(ctx, api.GatesRequest{Run: run})
			if err != nil {
				t.Fatalf("gates.list: %v", err)
			}
			if len(gates) != 1 || gates[0].Spec == nil || !strings.Contains(gates[0].Spec.Run, "rm -rf") {
				t.Fatalf("ask %d: the operator was shown %+v, not the gated command", i, gates)
			}
		}
	}
	if r := refused.Load(); r < 10 {
		t.Errorf("NATS refused %d of the executor's 10 subscriptions to the query subjects", r)
	}
	if a := answered.Load(); a != 0 {
		t.Errorf("the executor credential received %d queries", a)
	}
}
