package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/roles/ui/web"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers the executor sets on each output chunk (roles/executor).
const (
	logHeaderStream  = "Agentic-Stream"
	logHeaderAttempt = "Agentic-Attempt"
)

// outputIdle is how long the server keeps the ephemeral consumer of a
// dashboard stream that vanished without a clean stop.
const outputIdle = 30 * time.Second

// stepOutput follows one step's output for the dashboard (web.Output):
// an ordered consumer on AGENTIC_LOGS filtered to the step's subject,
// from the chunk after stream sequence after, until ctx ends. The ui
// role's NATS permissions allow exactly this (bus/natsauth).
func (n *Node) stepOutput(ctx context.Context, run, step string, after uint64, each func(web.OutputChunk)) error {
	st, err := n.conn.JS.Stream(ctx, bus.LogsStream)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("node: step output: stream %s: %w", bus.LogsStream, err)
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.LogSubject(run, step)}, InactiveThreshold: outputIdle}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("node: step output of %s/%s: consumer: %w", run, step, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("node: step output of %s/%s: consumer: %w", run, step, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer func() { stop(); it.Stop() }()
	for {
		m, err := it.Next()
		if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("node: step output of %s/%s: %w", run, step, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("node: step output of %s/%s: %w", run, step, err)
		}
		attempt, _ := strconv.Atoi(m.Headers().Get(logHeaderAttempt))
		stream := m.Headers().Get(logHeaderStream)
		if stream == "" {
			stream = "stdout"
		}
		each(web.OutputChunk{Seq: md.Sequence.Stream, Attempt: attempt, Stream: stream, Data: m.Data()})
	}
}
