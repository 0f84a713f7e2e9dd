package nodetest

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go/jetstream"
)

// PublishNotes writes n research notes (kb.noted, signed as a planner)
// of run onto the events stream through js, packed like PublishFacts:
// ids "<run>/notes/<i>", claims claim(i), each citing two sources on two
// hosts (so a critical one would not be quarantined for its sources).
// It returns how many it wrote once all are acknowledged.
func (w *HistoryWriter) PublishNotes(ctx context.Context, js jetstream.JetStream, run string, n int, claim func(i int) string) (int, error) {
	p := &publisher{js: js, batch: 200}
	size := 0
	for i := range n {
		d := event.MustDraft(event.KbNoted, run, event.KbNotedData{ID: fmt.Sprintf("%s/notes/%d", run, i), Step: "notes", Attempt: 1,
			Research: "read", Question: "Which port does the service listen on?", Claim: claim(i), Confidence: 0.8,
			Citations: []event.Citation{
				{SHA256: fmt.Sprintf("%064x", 2*i), Quote: "listens on port 8443", URL: "https://docs.example.com/p", Host: "docs.example.com"},
				{SHA256: fmt.Sprintf("%064x", 2*i+1), Quote: "port 8443 (TLS)", URL: "https://wiki.example.org/p", Host: "wiki.example.org"},
			}})
		if size += len(d.Data); size > maxFactsMessage {
			p.flush()
			size = len(d.Data)
		}
		p.add(w.planner, d)
		if p.err != nil {
			return p.events, p.err
		}
	}
	p.flush()
	if err := p.wait(ctx); err != nil {
		return p.events, err
	}
	return p.events, nil
}
