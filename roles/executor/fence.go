package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go/jetstream"
)

// elected records the leader elections of a verified leader.elected
// message carried at stream sequence seq.
func (e *Executor) elected(env *envelope.Envelope, seq uint64) error {
	var epochs []uint64
	for _, ev := range env.Events {
		var d event.LeaderElectedData
		if err := ev.Decode(&d); err != nil {
			e.log.Warn("bad leader election", "stream_seq", seq, "err", err)
			continue
		}
		epochs = append(epochs, d.Epoch)
	}
	return e.recordEpochs(seq, epochs)
}

// recordEpochs records elections of epochs at stream sequence seq
// (synced).
func (e *Executor) recordEpochs(seq uint64, epochs []uint64) error {
	for _, ep := range epochs {
		raised, err := e.state.RaiseEpoch(seq, ep)
		if err != nil {
			return fmt.Errorf("executor: record epoch %d at stream seq %d: %w", ep, seq, err)
		}
		if raised {
			e.log.Info("leader elected", "epoch", ep, "stream_seq", seq)
		}
	}
	return nil
}

// seedEpoch records the newest leader.elected on the stream. The consumer
// delivers only elections after its own creation (and after its position
// when an older executor made it without the election subject), so an
// election before that is learnt here. Recording it at its own stream
// sequence keeps the rule exact for assignments older than it that are
// still to be delivered.
func (e *Executor) seedEpoch(ctx context.Context) error {
	stream, err := e.cfg.JS.Stream(ctx, bus.EventsStream)
	if err != nil {
		return fmt.Errorf("executor: stream %s: %w", bus.EventsStream, err)
	}
	subj := event.Subject(event.LeaderElected, "")
	raw, err := stream.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("executor: last %s: %w", subj, err)
	}
	env, err := e.cfg.Verifier.Verify(raw.Data, raw.Subject, raw.Time)
	if err != nil {
		e.log.Warn("refused message", "subject", raw.Subject, "stream_seq", raw.Sequence, "err", err)
		return nil
	}
	if err := e.elected(env, raw.Sequence); err != nil {
		e.fatal(err)
		return err
	}
	return nil
}
