package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
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
	// Signed again a second later, as a restart does: JWT times have
	// one-second resolution, so the bytes differ.
	raw, _, err := envelope.SignAt(kit.Node, []event.Draft{d}, time.Now().Add(time.Second), envelope.Version)
	if err != nil {
		t.Fatal(err)
	}
	again := kit.Receive(3, d.Subject(), raw, time.Now().Add(time.Second))
	if string(again.Raw) == string(first.Raw) || again.Reject != nil {
		t.Fatalf("re-signing produced identical bytes, or was refused: %+v", again.Reject)
	}
	recs := mustAppend(t, st, ledgertest.Redeliver(first, 2), again)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 rejections", len(recs))
	}
	replay, republish := rejectedData(t, recs[0]), rejectedData(t, recs[1])
	if replay.Code != event.RejectReplayed || !strings.HasPrefix(replay.Reason, "replayed message id ") {
		t.Errorf("same bytes: %s %q, want a replay", replay.Code, replay.Reason)
	}
	if republish.Code != event.RejectRepublished || !strings.HasPrefix(republish.Reason, ledger.ReasonRepublished) || !strings.Contains(republish.Reason, "stream seq 1") {
		t.Errorf("re-signed copy: %s %q, want a republication of stream seq 1", republish.Code, republish.Reason)
	}
}
