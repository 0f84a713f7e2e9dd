package artifact_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest"
)

// TestPermissions: under the cluster's NATS permissions a node creates the
// bucket, an executor stores and reads, an operator reads, and a node of
// another role cannot store.
func TestPermissions(t *testing.T) {
	ids := bustest.NewIdentities(t)
	srv := bustest.SecureServer(t, ids.Root)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ex := bustest.ConnectAs(t, srv, ids.Root, ids.Node(t, "exec-a", "executor"))
	if err := bus.EnsureStreams(ctx, ex.JS, bus.StreamConfig{Replicas: 1, StoreLimit: srv.MaxStore()}); err != nil {
		t.Fatalf("an executor's start: %v", err)
	}
	st, err := artifact.Open(ctx, ex.JS)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 300<<10)
	info, err := st.Put(ctx, "out.bin", bytes.NewReader(data), artifact.PutOptions{})
	if err != nil {
		t.Fatalf("executor put: %v", err)
	}
	// An executor reserves a run's bytes and gives them back.
	if _, err := st.Reserve(ctx, "run-1", 10, 0, 100); err != nil {
		t.Fatalf("executor reserve: %v", err)
	}
	if err := st.Release(ctx, "run-1", 10); err != nil {
		t.Fatalf("executor release: %v", err)
	}
	for _, c := range []*bus.Conn{ex, bustest.ConnectAs(t, srv, ids.Root, ids.Node(t, "alice", "operator"))} {
		rd, err := artifact.Open(ctx, c.JS)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := rd.Get(ctx, info.SHA256, info.Size, "", &out); err != nil || !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("get as %s: %v (%d bytes)", c.NC.Opts.Name, err, out.Len())
		}
	}
	pl := bustest.ConnectAs(t, srv, ids.Root, ids.Node(t, "plan-a", "planner"))
	ps, err := artifact.Open(ctx, pl.JS)
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := ps.Put(pctx, "x", bytes.NewReader([]byte("no")), artifact.PutOptions{}); err == nil {
		t.Fatal("a planner stored an artifact")
	}
}
