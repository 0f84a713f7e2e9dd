package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/policy"
)

// TestPolicyQueries: a node folds an administrator's policy.applied into
// its policy index and answers policy.show and policy.list with it.
func TestPolicyQueries(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	ctx := context.Background()

	// The version in force (a leader may have recorded its bootstrap
	// policy already).
	var base int64
	var in api.PolicyVersion
	err := n.API.Call(ctx, api.MethodPolicyShow, api.PolicyRequest{}, &in)
	switch {
	case err == nil:
		base = in.Version
	case errors.Is(err, api.ErrNotFound):
		if api.HintOf(err) == "" {
			t.Errorf("policy.show on a ledger without a policy gives no hint: %v", err)
		}
	default:
		t.Fatal(err)
	}

	text := "name: strict\ndefault: confirm\nrules:\n  - pattern: \"ls\"\n    action: allow\n"
	p, err := policy.Parse([]byte(text), "strict")
	if err != nil {
		t.Fatal(err)
	}
	d := event.MustDraft(event.PolicyApplied, "", event.PolicyAppliedData{Base: base, Name: "strict", Hash: p.Hash(), Text: text, Source: event.PolicyFromApply, Reason: "tighten"})
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(pctx, n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "policy.show shows the applied version", func() bool {
		err := n.API.Call(ctx, api.MethodPolicyShow, api.PolicyRequest{}, &in)
		return err == nil && in.Version == base+1
	})
	if in.Hash != p.Hash() || in.Text != text || in.Signer != n.Operator.ID || in.Source != event.PolicyFromApply || in.Reason != "tighten" {
		t.Fatalf("policy in force = %+v", in)
	}
	var page api.Page[api.PolicyVersion]
	if err := n.API.Call(ctx, api.MethodPolicyList, api.PolicyListRequest{}, &page); err != nil {
		t.Fatal(err)
	}
	if !page.End || len(page.Items) != int(base+1) || page.Items[0].Version != base+1 || page.Items[0].Text != "" {
		t.Fatalf("policy.list = %+v", page)
	}
}
