package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// The same bytes again are a replay; the same id signed again by its own
// signer (an outbox republishing after a restart) is a republication. Both
// are refused; the reasons tell them apart.
func TestReplayAndRepublishAreToldApart(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	d := event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "a"})
	first := kit.Message(1, kit.Node, d)
	mustAppend(t, st, first)
	// JWT times have one-second resolution: wait so that signing again
	// yields different bytes, as a restart does.
	time.Sleep(1100 * time.Millisecond)
	again := kit.Message(3, kit.Node, d)
	if string(again.Raw) == string(first.Raw) {
		t.Fatal("re-signing produced identical bytes")
	}
	recs := mustAppend(t, st, ledgertest.Redeliver(first, 2), again)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 rejections", len(recs))
	}
	replay, republish := rejectedData(t, recs[0]), rejectedData(t, recs[1])
	if !strings.HasPrefix(replay.Reason, "replayed message id ") {
		t.Errorf("same bytes: reason %q, want a replay", replay.Reason)
	}
	if !strings.HasPrefix(republish.Reason, ledger.ReasonRepublished) || !strings.Contains(republish.Reason, "stream seq 1") {
		t.Errorf("re-signed copy: reason %q, want a republication of stream seq 1", republish.Reason)
	}
}
