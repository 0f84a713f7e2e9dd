package api

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// headServer starts a server for node answering ledger.head with seq, also
// on AllSubject.
func headServer(t *testing.T, url, node string, seq uint64) {
	t.Helper()
	srv := NewServer(connect(t, url), node, nil)
	HandleTyped(srv, MethodLedgerHead, func(_ context.Context, req HeadRequest) (LedgerHead, error) {
		if req.At > seq {
			return LedgerHead{}, fmt.Errorf("%w: %d beyond head %d", ErrBadRequest, req.At, seq)
		}
		h := LedgerHead{Node: node, Seq: seq, Hash: fmt.Sprintf("%s-%d", node, seq)}
		if req.At > 0 {
			h.At, h.AtHash = req.At, fmt.Sprintf("%s@%d", node, req.At)
		}
		return h, nil
	})
	srv.Broadcast(MethodLedgerHead)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
}

// Every node answers a gather; At reaches one node, whichever node the
// queue group would have picked.
func TestGatherAndAt(t *testing.T) {
	url := startNATS(t)
	c := NewClient(connect(t, url), 2*time.Second)
	ctx := context.Background()

	if _, err := c.LedgerHeads(ctx, 200*time.Millisecond); !errors.Is(err, ErrNoNode) {
		t.Fatalf("gather with no node = %v, want ErrNoNode", err)
	}
	headServer(t, url, "node-b", 7)
	headServer(t, url, "node-a", 5)
	headServer(t, url, "node-c", 9)
	heads, err := c.LedgerHeads(ctx, 500*time.Millisecond)
	if err != nil || len(heads) != 3 {
		t.Fatalf("LedgerHeads = %+v, %v", heads, err)
	}
	for i, want := range []struct {
		node string
		seq  uint64
	}{{"node-a", 5}, {"node-b", 7}, {"node-c", 9}} {
		if heads[i].Node != want.node || heads[i].Seq != want.seq {
			t.Errorf("head %d = %+v, want %s at %d", i, heads[i], want.node, want.seq)
		}
	}
	// GatherFrom returns once the nodes expected have answered, well
	// before its wait: else the context ends first and it fails.
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	answers, err := GatherFrom[LedgerHead](gctx, c, MethodLedgerHead, HeadRequest{}, time.Hour, []string{"node-a", "node-c"})
	if err != nil || len(answers) < 2 || answers[0].Node != "node-a" {
		t.Fatalf("GatherFrom = %+v, %v", answers, err)
	}
	for range 10 {
		h, err := c.At("node-b").LedgerHead(ctx, 3)
		if err != nil || h.Node != "node-b" || h.AtHash != "node-b@3" {
			t.Fatalf("At(node-b).LedgerHead(3) = %+v, %v", h, err)
		}
	}
	if _, err := c.At("node-a").LedgerHead(ctx, 6); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("hash beyond the head = %v, want ErrBadRequest", err)
	}
	if _, err := c.At("node-z").LedgerHead(ctx, 0); !errors.Is(err, ErrNoNode) {
		t.Fatalf("At an absent node = %v, want ErrNoNode", err)
	}
}

// A method not marked with Broadcast is not answered on AllSubject; every
// method is answered on the node's own subject.
func TestBroadcastOnlyWhenMarked(t *testing.T) {
	url := startNATS(t)
	srv := NewServer(connect(t, url), "node-a", nil)
	HandleTyped(srv, MethodNodeInfo, func(context.Context, struct{}) (NodeInfo, error) { return NodeInfo{ID: "node-a"}, nil })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := NewClient(connect(t, url), 2*time.Second)
	if _, err := Gather[NodeInfo](context.Background(), c, MethodNodeInfo, nil, 200*time.Millisecond); !errors.Is(err, ErrNoNode) {
		t.Fatalf("gather of an unmarked method = %v, want ErrNoNode", err)
	}
	if info, err := c.At("node-a").NodeInfo(context.Background()); err != nil || info.ID != "node-a" {
		t.Fatalf("At(node-a).NodeInfo = %+v, %v", info, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Broadcast after Start did not panic")
		}
	}()
	srv.Broadcast(MethodNodeInfo)
}
