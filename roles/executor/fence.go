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
	for _, ev := range env.Events {
		var d event.LeaderElectedData
		if err := ev.Decode(&d); err != nil {
			e.log.Warn("bad leader election", "stream_seq", seq, "err", err)
			continue
		}
		raised, err := e.state.RaiseEpoch(seq, d.Epoch)
		if err != nil {
			return fmt.Errorf("executor: record epoch %d at stream seq %d: %w", d.Epoch, seq, err)
		}
		if raised {
			e.noteEpoch(d.Epoch)
			e.log.Info("leader elected", "epoch", d.Epoch, "leader", d.Leader, "stream_seq", seq)
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
	if err := e.loadEpoch(); err != nil {
		return err
	}
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

// loadEpoch reads the newest recorded epoch into the counters.
func (e *Executor) loadEpoch() error {
	ep, err := e.state.Epoch()
	if err != nil {
		return fmt.Errorf("executor: read epoch: %w", err)
	}
	e.noteEpoch(ep)
	return nil
}

// noteEpoch raises the epoch shown by Stats.
func (e *Executor) noteEpoch(ep uint64) {
	for {
		cur := e.epoch.Load()
		if ep <= cur || e.epoch.CompareAndSwap(cur, ep) {
			return
		}
	}
}
