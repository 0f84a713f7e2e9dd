package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// TestNodeInfoRootAndLedgerOutcome: node.info names the root the node
// trusts, and ledger.outcome says what the ledger made of each message —
// accepted events, or a rejection with its code and the claimed event id —
// for messages before, between and after one another.
func TestNodeInfoRootAndLedgerOutcome(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	ctx := context.Background()
	info, err := n.API.NodeInfo(ctx)
	if err != nil || info.Root != n.Root.KeyID() || info.Root == "" {
		t.Fatalf("node.info root = %q (%v), want %q", info.Root, err, n.Root.KeyID())
	}

	other, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := trust.NewIdentity(other, "mallory", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id *trust.Identity, key string) (uint64, string) {
		t.Helper()
		d := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: key, Value: "v"})
		acks, err := bus.PublishSignedAcks(ctx, n.JS, id, d)
		if err != nil || len(acks) != 1 {
			t.Fatalf("publish: %v (%d acks)", err, len(acks))
		}
		return acks[0].Sequence, d.ID
	}
	seq1, id1 := put(n.Operator, "a")
	seq2, id2 := put(mallory, "b")
	seq3, id3 := put(n.Operator, "c")

	judged := func(seq uint64) *api.Outcome {
		t.Helper()
		var o *api.Outcome
		if err := poll.Wait(20*time.Second, func() bool {
			o, err = n.API.LedgerOutcome(ctx, seq)
			return err == nil && o.Judged()
		}); err != nil {
			t.Fatalf("stream seq %d not judged: %+v, %v", seq, o, err)
		}
		return o
	}
	for _, c := range []struct {
		seq     uint64
		id, typ string
		code    string
	}{
		{seq1, id1, string(event.MemoryPut), ""},
		{seq2, id2, string(event.Rejected), string(event.RejectUnknownSigner)},
		{seq3, id3, string(event.MemoryPut), ""},
	} {
		o := judged(c.seq)
		if o.Node != info.ID || o.StreamSeq != c.seq || len(o.Records) != 1 {
			t.Fatalf("outcome of %d = %+v", c.seq, o)
		}
		r := o.Records[0]
		if r.Type != c.typ || r.ID != c.id || r.Code != c.code || r.Seq == 0 || (c.code != "" && r.Reason == "") {
			t.Errorf("outcome of %d = %+v, want %s %s %q", c.seq, r, c.typ, c.id, c.code)
		}
	}

	// A sequence not folded yet is not judged; 0 is a bad request.
	o, err := n.API.LedgerOutcome(ctx, seq3+1000)
	if err != nil || o.Judged() || len(o.Records) != 0 {
		t.Errorf("outcome of a future seq = %+v, %v", o, err)
	}
	if _, err := n.API.LedgerOutcome(ctx, 0); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("outcome of seq 0 = %v, want ErrBadRequest", err)
	}
}

// TestLedgerOutcomeOfACountedRefusal: past the rejection rate a refused
// message has no record of its own — counted in an event.rejected_summary,
// the run's last one included — and ledger.outcome answers with no
// records (refused), never with the summary.
func TestLedgerOutcomeOfACountedRefusal(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	ctx := context.Background()
	other, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := trust.NewIdentity(other, "mallory", trust.KindOperator, []string{event.RoleOperator}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for i := range ledger.RejectFullPerSigner + 3 {
		d := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: fmt.Sprint(i), Value: "v"})
		acks, err := bus.PublishSignedAcks(ctx, n.JS, mallory, d)
		if err != nil || len(acks) != 1 {
			t.Fatalf("publish: %v", err)
		}
		seqs = append(seqs, acks[0].Sequence)
	}
	// A valid message ends the run: its summary is written before it.
	d := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "ok", Value: "v"})
	acks, err := bus.PublishSignedAcks(ctx, n.JS, n.Operator, d)
	if err != nil || len(acks) != 1 {
		t.Fatalf("publish: %v", err)
	}
	poll.Eventually(t, 20*time.Second, "the valid message judged", func() bool {
		o, err := n.API.LedgerOutcome(ctx, acks[0].Sequence)
		return err == nil && o.Judged() && len(o.Records) == 1
	})
	last := seqs[len(seqs)-1] // the summary's own stream seq
	for _, seq := range []uint64{seqs[len(seqs)-2], last} {
		o, err := n.API.LedgerOutcome(ctx, seq)
		if err != nil || !o.Judged() || len(o.Records) != 0 {
			t.Errorf("outcome of counted refusal %d = %+v, %v: want judged, no records", seq, o, err)
		}
	}
	o, err := n.API.LedgerOutcome(ctx, seqs[0])
	if err != nil || len(o.Records) != 1 || o.Records[0].Code != string(event.RejectUnknownSigner) {
		t.Errorf("outcome of the first refusal = %+v, %v: want it recorded", o, err)
	}
}

// TestLedgerOutcomeWaits: ledger.outcome with a wait, asked for a message
// not yet published, answers once the ledger has folded it — one request
// where a publisher used to poll — and an outcome that does not come in
// time is answered unjudged when the wait runs out.
func TestLedgerOutcomeWaits(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	ctx := context.Background()
	d := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "first", Value: "v"})
	acks, err := bus.PublishSignedAcks(ctx, n.JS, n.Operator, d)
	if err != nil || len(acks) != 1 {
		t.Fatalf("publish: %v", err)
	}
	next := acks[0].Sequence + 1

	o, err := n.API.LedgerOutcomeWait(ctx, next+100, 300*time.Millisecond)
	if err != nil || o.Judged() {
		t.Fatalf("outcome of a message never published: %+v, %v; want unjudged after the wait", o, err)
	}

	type answer struct {
		o    *api.Outcome
		err  error
		took time.Duration
	}
	got := make(chan answer, 1)
	start := time.Now()
	go func() {
		o, err := n.API.LedgerOutcomeWait(ctx, next, 10*time.Second)
		got <- answer{o, err, time.Since(start)}
	}()
	// The call waits: nothing comes back before the message is published.
	select {
	case a := <-got:
		t.Fatalf("answered before the publish: %+v, %v", a.o, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	d2 := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: "second", Value: "v"})
	if acks, err = bus.PublishSignedAcks(ctx, n.JS, n.Operator, d2); err != nil || acks[0].Sequence != next {
		t.Fatalf("publish: %v (%+v), want stream seq %d", err, acks, next)
	}
	a := <-got
	if a.err != nil || !a.o.Judged() || len(a.o.Records) != 1 || a.o.Records[0].ID != d2.ID {
		t.Fatalf("outcome after waiting: %+v, %v; want the second put judged", a.o, a.err)
	}
	if a.took < 250*time.Millisecond || a.took > 5*time.Second {
		t.Fatalf("answered after %s: want it after the publish (300ms), well within the wait", a.took)
	}
}
