package bus

import (
	"context"
	"fmt"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go/jetstream"
)

// PublishSigned signs drafts as id and publishes them synchronously, one
// message per subject, each with Nats-Msg-Id set to the message's jti. It is
// for callers without an outbox (agentctl, tests): the caller learns from the
// error whether the events reached the stream.
func PublishSigned(ctx context.Context, js jetstream.JetStream, id *trust.Identity, drafts ...event.Draft) error {
	_, err := PublishSignedAcks(ctx, js, id, drafts...)
	return err
}

// PublishSignedAcks is PublishSigned returning the stream's
// acknowledgement of each message published, in order: where each landed
// (its stream sequence), for a publisher that waits for the ledger's
// judgement of it. On error, the acks of the messages published before.
func PublishSignedAcks(ctx context.Context, js jetstream.JetStream, id *trust.Identity, drafts ...event.Draft) ([]jetstream.PubAck, error) {
	msgs, err := SignDrafts(id, drafts...)
	if err != nil {
		return nil, err
	}
	return PublishMsgs(ctx, js, msgs)
}

// Signed is one message signed for one subject (SignDrafts), ready to
// publish.
type Signed struct {
	Subject string
	// ID is the message's jti, its Nats-Msg-Id.
	ID  string
	Raw []byte
}

// SignDrafts signs drafts as id, one message per subject
// (GroupBySubject), without publishing them: a publisher that must ask
// something first (agentctl: which root the cluster trusts) signs while
// it waits for the answer, and publishes with PublishMsgs.
func SignDrafts(id *trust.Identity, drafts ...event.Draft) ([]Signed, error) {
	var out []Signed
	for _, group := range GroupBySubject(drafts) {
		raw, jti, err := envelope.Sign(id, group)
		if err != nil {
			return nil, err
		}
		out = append(out, Signed{Subject: group[0].Subject(), ID: jti, Raw: raw})
	}
	return out, nil
}

// PublishMsgs publishes signed messages synchronously, in order, each
// with Nats-Msg-Id set to its jti, and returns the stream's
// acknowledgements (on error, those of the messages published before).
func PublishMsgs(ctx context.Context, js jetstream.JetStream, msgs []Signed) ([]jetstream.PubAck, error) {
	var acks []jetstream.PubAck
	for _, m := range msgs {
		ack, err := js.Publish(ctx, m.Subject, m.Raw, jetstream.WithMsgID(m.ID))
		if err != nil {
			return acks, fmt.Errorf("bus: publish %s (%s): %w", m.Subject, m.ID, err)
		}
		acks = append(acks, *ack)
	}
	return acks, nil
}

// GroupBySubject splits drafts into runs of the same subject, keeping the
// order of first appearance of each subject and the order within it.
func GroupBySubject(drafts []event.Draft) [][]event.Draft {
	var out [][]event.Draft
	idx := make(map[string]int)
	for _, d := range drafts {
		s := d.Subject()
		i, ok := idx[s]
		if !ok {
			i = len(out)
			idx[s] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], d)
	}
	return out
}
