package planner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
)

// TestCritiqueHugeAnswerIsBounded: a model whose judgement runs to a
// megabyte and holds a secret gets its verdict recorded once, the
// judgement cut to MaxJudgement and marked, the answers dropped from the
// provenance, and the event passes the checks the outbox makes once
// redacted, the secret gone (it would otherwise be refused at every
// retry, the model asked again each time, and the run wait for ever).
func TestCritiqueHugeAnswerIsBounded(t *testing.T) {
	const secret = "AKIAIOSFODNN7EXAMPLE"
	huge := "the key " + secret + " was printed; " + strings.Repeat("and then it went on. ", 50000)
	calls := make(chan struct{}, 10)
	f := func(context.Context, event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error) {
		calls <- struct{}{}
		return event.VerdictFail, huge, &event.PlannerInfo{Planner: "test", Responses: []string{huge}}, nil
	}
	b := &bus{}
	p := b.planner(t, "smart", Config{Text: newJudge(f), ClaimTimeout: time.Hour})
	b.request("r", 1)
	p.Settled(true)
	poll.Eventually(t, 10*time.Second, "the verdict", func() bool { return len(b.of(event.CritiqueRecorded)) == 1 })
	ev := b.of(event.CritiqueRecorded)[0]
	d := recordedOf(t, ev)
	if d.Verdict != event.VerdictFail || len(d.Judgement) > MaxJudgement+32 || !strings.HasSuffix(d.Judgement, "(truncated)") ||
		!strings.HasPrefix(d.Judgement, "the key ") || d.Planner == nil || d.Planner.Responses != nil {
		t.Fatalf("verdict %s, judgement of %d bytes ending %q, provenance %+v", d.Verdict, len(d.Judgement), d.Judgement[max(0, len(d.Judgement)-20):], d.Planner)
	}
	draft, err := envelope.RedactDraft(event.Draft{ID: ev.ID, Type: ev.Type, Run: ev.Run, Data: ev.Data})
	if err != nil {
		t.Fatal(err)
	}
	if err := envelope.CheckDraft(draft); err != nil || strings.Contains(string(draft.Data), secret) {
		t.Fatalf("the recorded verdict as emitted: %v, secret kept %v", err, strings.Contains(string(draft.Data), secret))
	}
	if len(calls) != 1 {
		t.Fatalf("the model was asked %d times", len(calls))
	}
}
