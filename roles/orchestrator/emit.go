package orchestrator

import (
	"context"
	"errors"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
)

// emitLoop emits the decisions the owner hands it (jobs), one batch at a
// time, and answers each with the drafts that could not be emitted
// (results), which the owner forgets. A slow outbox holds back no fold.
func (o *Orchestrator) emitLoop(ctx context.Context, jobs <-chan []event.Draft, results chan<- []event.Draft) {
	for {
		select {
		case <-ctx.Done():
			return
		case drafts := <-jobs:
			results <- o.emit(ctx, drafts) // buffered: one job at a time
		}
	}
}

// emit emits drafts together and returns those not emitted. When the
// emitter refuses them for what one carries, it emits them one at a time.
func (o *Orchestrator) emit(ctx context.Context, drafts []event.Draft) []event.Draft {
	err := o.env.Emit.Emit(ctx, drafts...)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return drafts
	}
	o.log.Error("emit decisions", "err", err, "count", len(drafts))
	if len(drafts) > 1 && refused(err) {
		return o.emitEach(ctx, drafts)
	}
	return drafts
}

// refused reports whether the emitter refused a draft for what it
// carries (too large for an event, or a secret left after redaction):
// emitting it again will not help.
func refused(err error) bool {
	return errors.Is(err, envelope.ErrTooLarge) || errors.Is(err, envelope.ErrSecret)
}

// emitEach emits drafts one at a time, after the emitter refused them
// together: a decision it refuses must not hold back the others (of
// every run) at every Decide. The refused one is logged and returned with
// the others not emitted.
func (o *Orchestrator) emitEach(ctx context.Context, drafts []event.Draft) []event.Draft {
	var failed []event.Draft
	for i, d := range drafts {
		if err := o.env.Emit.Emit(ctx, d); err != nil {
			if ctx.Err() != nil {
				return append(failed, drafts[i:]...)
			}
			o.log.Error("emit decision", "err", err, "type", d.Type, "run", d.Run, "id", d.ID)
			failed = append(failed, d)
		}
	}
	return failed
}
