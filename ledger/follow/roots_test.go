package follow_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/follow"
)

// TestRootAddedAppliesFromTheNextMessage: on a server in operator mode, a
// history that adds a root and later retires the genesis, published
// before any ledger follows it (so that it arrives in one batch), folds
// into the same records on two ledgers: the new root's credential refused
// before the trust.root_added and accepted right after it, the genesis's
// refused after the trust.root_retired; the ledgers verify.
func TestRootAddedAppliesFromTheNextMessage(t *testing.T) {
	ids := bustest.NewIdentities(t)
	srv := bustest.SecureServer(t, ids.Root)
	conn := bustest.ConnectHarness(t, srv, ids.Root)
	next, err := trust.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	oldEx := ids.Node(t, "exec-1", event.RoleExecutor)
	admin := bustest.Admin(t, ids.Root)
	newEx, err := trust.NewIdentity(next, "exec-1", trust.KindNode, []string{event.RoleExecutor}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := next.RootProof(ids.Root.KeyID())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type step struct {
		id    *trust.Identity
		draft event.Draft
		want  event.RejectCode
	}
	task := func(s string) event.Draft {
		return event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: s, Attempt: 1, Node: "exec-1"})
	}
	steps := []step{
		{newEx, task("a"), event.RejectUnknownSigner},
		{admin, event.MustDraft(event.RootAdded, "", event.RootAddedData{Key: hex.EncodeToString(next.Public), KeyID: next.KeyID(), Proof: proof}), ""},
		{newEx, task("b"), ""},
		{oldEx, task("c"), ""},
		{admin, event.MustDraft(event.RootRetired, "", event.RootRetiredData{KeyID: ids.Root.KeyID()}), ""},
		{oldEx, task("d"), event.RejectRootRetired},
		{newEx, task("e"), ""},
	}
	for _, s := range steps {
		if err := bus.PublishSigned(ctx, conn.JS, s.id, s.draft); err != nil {
			t.Fatal(err)
		}
	}
	var heads [][32]byte
	for range 2 {
		st, err := ledger.Open(t.TempDir(), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		v := envelope.NewVerifier(ids.Root)
		f := follow.New(follow.Config{JS: conn.JS, Store: st, Verifier: v})
		if err := f.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Stop)
		poll.Eventually(t, 30*time.Second, "the ledger folded the history", func() bool { return st.AppliedStreamSeq() == uint64(len(steps)) })
		var got []event.RejectCode
		for rec, err := range st.Scan(1) {
			if err != nil {
				t.Fatal(err)
			}
			var code event.RejectCode
			if rec.Event.Type == event.Rejected {
				var d event.RejectedData
				if err := rec.Event.Decode(&d); err != nil {
					t.Fatal(err)
				}
				code = d.Code
			}
			got = append(got, code)
		}
		if len(got) != len(steps) {
			t.Fatalf("%d records, want %d", len(got), len(steps))
		}
		for i, s := range steps {
			if got[i] != s.want {
				t.Fatalf("message %d: %q, want %q", i+1, got[i], s.want)
			}
		}
		if rep, err := st.Verify(envelope.NewVerifier(ids.Root)); err != nil || !rep.OK {
			t.Fatalf("verify: %+v %v", rep, err)
		}
		_, h := st.Head()
		heads = append(heads, h)
	}
	if heads[0] != heads[1] {
		t.Fatal("two ledgers of one stream differ")
	}
}
