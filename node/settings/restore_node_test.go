package settings_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/node/settings"
)

// publishSettings publishes cluster settings signed by the node's
// operator and waits until the node has them in force and compared.
func publishSettings(t *testing.T, n *nodetest.Node, d event.ClusterSettingsData) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.ClusterSettings, "", d)); err != nil {
		t.Fatal(err)
	}
	var in settings.InForce
	poll.Eventually(t, 20*time.Second, "the settings in force and compared", func() bool {
		return n.API.Call(context.Background(), settings.Method, nil, &in) == nil && in.Revision == d.Revision && in.CheckedRevision == d.Revision
	})
}

// TestDeletedEventsStreamRestoredLedgerGoesOn: on a real node under the
// restore rule, AGENTIC_EVENTS deleted is recreated at once with its
// sequence continuing after the ledger's; the ledger's follower goes on
// folding from it with no gap recorded, and the executor (its durable
// consumer deleted with the stream) runs the next goal.
func TestDeletedEventsStreamRestoredLedgerGoesOn(t *testing.T) {
	rec := &logrec.Recorder{}
	n := nodetest.StartLogged(t, nodetest.Config(t.TempDir()), slog.New(rec))
	d := settings.Default().Data()
	d.Revision, d.Streams.Repair = 1, event.StreamsRepairRestore
	publishSettings(t, n, d)
	const plan = "goal: g\nsteps:\n  - id: a\n    run: echo hi\n"
	if r := n.WaitRun(t, n.Submit(t, "p.yaml", plan), 30*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("run before: %s", r.Status)
	}

	ctx := context.Background()
	st, err := n.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	last := st.CachedInfo().State.LastSeq
	if err := n.JS.DeleteStream(ctx, bus.EventsStream); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the stream made again", func() bool {
		s, err := n.JS.Stream(ctx, bus.EventsStream)
		return err == nil && s.CachedInfo().State.FirstSeq == last+1
	})
	// An event published now is folded by the ledger: the follower
	// resumed on the new stream.
	d.Revision, d.Streams.Events.MaxAge = 2, "48h"
	publishSettings(t, n, d)
	for l, err := range n.API.AuditLines(ctx, api.AuditRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == string(event.Gap) {
			t.Fatalf("the ledger recorded a gap: %+v", l)
		}
	}
	if r := n.WaitRun(t, n.Submit(t, "p.yaml", plan), 30*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("run after the stream was restored: %s", r.Status)
	}
	if got := rec.Find("stream restored: it was deleted, and is recreated with the cluster settings (streams repair rule: restore)"); len(got) != 1 {
		t.Fatalf("restore logged %d times", len(got))
	}
}
