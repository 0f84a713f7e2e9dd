package nodetest

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go/jetstream"
)

// maxFactsMessage bounds the payload bytes PublishFacts packs into one
// signed message.
const maxFactsMessage = 256 << 10

// PublishFacts writes n operator facts of scope shared onto the events
// stream through js, up to 200 (and 256 KiB) to a signed message, keys "fact.%06d" and values
// value(i), and returns how many it wrote once all are acknowledged.
func (w *HistoryWriter) PublishFacts(ctx context.Context, js jetstream.JetStream, n int, value func(i int) string) (int, error) {
	p := &publisher{js: js, batch: 200}
	size := 0
	for i := range n {
		d := event.MustDraft(event.MemoryPut, "", event.MemoryPutData{Scope: "shared", Key: fmt.Sprintf("fact.%06d", i), Value: value(i)})
		if size += len(d.Data); size > maxFactsMessage {
			p.flush() // a signed message stays well under the envelope's limit
			size = len(d.Data)
		}
		p.add(w.op, d)
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
