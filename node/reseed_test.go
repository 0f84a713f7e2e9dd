package node_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// A node whose events stream was deleted while it was down, its ledger
// whole, starts again: the stream is recreated continuing after the
// ledger's head, nothing of the ledger is lost or looks like a gap, and a
// new goal runs.
func TestDeletedStreamIsReseededFromTheLedger(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	ctx := context.Background()
	first := n.Submit(t, "one.yaml", onePlan)
	if r := n.WaitRun(t, first, 30*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("run = %+v", r)
	}
	v1, err := n.API.LedgerVerify(ctx)
	if err != nil || !v1.OK {
		t.Fatalf("verify: %+v %v", v1, err)
	}
	runs1, err := n.API.RunsList(ctx, api.RunsListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	h1, err := n.API.LedgerHead(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	n.Stop(t)

	conn, closeBus := nodetest.StoppedNodeBus(t, ctx, dir, "test-node")
	if err := conn.JS.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	closeBus()

	n2 := nodetest.Start(t, nodetest.Config(dir))
	s, err := n2.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.FirstSeq <= h1.Applied {
		t.Errorf("recreated stream starts at %d; the ledger applied %d", info.State.FirstSeq, h1.Applied)
	}
	runs2, err := n2.API.RunsList(ctx, api.RunsListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs2.Items) != len(runs1.Items) || len(runs2.Items) == 0 || runs2.Items[0].ID != runs1.Items[0].ID {
		t.Fatalf("runs after re-seed: %+v, before: %+v", runs2.Items, runs1.Items)
	}
	v2, err := n2.API.LedgerVerify(ctx)
	if err != nil || !v2.OK || v2.Events < v1.Events {
		t.Fatalf("verify after re-seed: %+v (before %+v) %v", v2, v1, err)
	}
	gaps, err := n2.API.Audit(ctx, api.AuditRequest{Types: []string{string(event.Gap)}})
	if err == nil && len(gaps.Items) > 0 {
		t.Fatalf("the re-seeded stream was recorded as a gap: %+v", gaps.Items)
	}
	second := n2.Submit(t, "one.yaml", onePlan)
	if r := n2.WaitRun(t, second, 30*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("a new goal after the re-seed: %+v", r)
	}
}

// --rebuild-ledger rebuilds from a stream that holds the whole history,
// and refuses a stream shorter than the ledger it would replace: the
// ledger is put back, and the start fails saying why and what to do.
func TestRebuildRefusesAStreamShorterThanTheLedger(t *testing.T) {
	dir := t.TempDir()
	cfg := nodetest.Config(dir)
	cfg.Ledger.BootstrapTimeout = time.Second
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	run := n.Submit(t, "one.yaml", onePlan)
	n.WaitRun(t, run, 30*time.Second)
	h1, err := n.API.LedgerHead(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	n.Stop(t)

	// The stream holds everything: the rebuild goes ahead.
	if _, err := node.RebuildLedger(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	n2 := nodetest.Start(t, cfg)
	if r, err := n2.API.RunsGet(ctx, run); err != nil || r.Status != event.RunSucceeded {
		t.Fatalf("run after a rebuild from the whole stream: %+v %v", r, err)
	}
	v, err := n2.API.LedgerVerify(ctx)
	if err != nil || !v.OK {
		t.Fatalf("verify after the rebuild: %+v %v", v, err)
	}
	h2, err := n2.API.LedgerHead(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	n2.Stop(t)

	// The stream is deleted and made again from 1, empty.
	conn, closeBus := nodetest.StoppedNodeBus(t, ctx, dir, cfg.Name)
	if err := conn.JS.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	closeBus()
	if _, err := node.RebuildLedger(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	n3, err := node.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = n3.Start(sctx)
	cancel()
	if err == nil {
		n3.Stop(ctx)
		t.Fatal("a rebuild from an empty stream replaced a ledger that folded it up to " + strconv.FormatUint(h2.Applied, 10))
	}
	if !strings.Contains(err.Error(), "rebuild refused") {
		t.Errorf("start error = %v", err)
	}
	st, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The heads read over the API may trail what the node folded before
	// it stopped; the rebuilt ledger would have had nothing.
	if seq, _ := st.Head(); seq < h2.Seq || st.AppliedStreamSeq() < h2.Applied || h2.Applied < h1.Applied {
		t.Fatalf("the ledger put back has head %d applied %d; it had %d applied %d", seq, st.AppliedStreamSeq(), h2.Seq, h2.Applied)
	}
}
