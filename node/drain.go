package node

import (
	"context"
	"fmt"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go/jetstream"
)

// drainPoll is how often a draining node looks whether its executor has
// finished.
const drainPoll = 200 * time.Millisecond

// watchDrain follows node.drain on the stream from the node's start (a
// drain published while it was down was for an earlier process) and, on
// one for this node, drains it: it announces draining in gossip, waits
// for its executor to have nothing running, and leaves the gossip group,
// which the leader records as node.left. The process goes on running
// outside the cluster until it is stopped. It runs only with gossip.
func (n *Node) watchDrain(ctx context.Context, since time.Time) error {
	cons, err := n.conn.JS.OrderedConsumer(ctx, bus.EventsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{event.Subject(event.NodeDrain, "")},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	})
	if err != nil {
		return fmt.Errorf("node: follow node.drain: %w", err)
	}
	asked := make(chan string, 1)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if reason, ok := n.drainFor(m); ok {
			select {
			case asked <- reason:
			default:
			}
		}
	})
	if err != nil {
		return fmt.Errorf("node: follow node.drain: %w", err)
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer cc.Stop()
		select {
		case <-ctx.Done():
		case reason := <-asked:
			cc.Stop()
			n.drain(ctx, reason)
		}
	}()
	return nil
}

// drainFor reports whether m is a verified node.drain for this node.
func (n *Node) drainFor(m jetstream.Msg) (string, bool) {
	md, err := m.Metadata()
	if err != nil {
		return "", false
	}
	env, err := n.verifier.Verify(m.Data(), m.Subject(), md.Timestamp)
	if err != nil {
		n.log.Warn("refused node.drain message", "stream_seq", md.Sequence.Stream, "err", err)
		return "", false
	}
	if env.Type != event.NodeDrain {
		return "", false
	}
	for _, ev := range env.Events {
		var d event.NodeDrainData
		if ev.Decode(&d) == nil && d.Node == n.cfg.Name {
			return d.Reason, true
		}
	}
	return "", false
}

// drain announces draining, waits for the executor to be idle and
// leaves gossip.
func (n *Node) drain(ctx context.Context, reason string) {
	g := n.gossip
	n.log.Info("draining: taking no new work, then leaving the cluster", "reason", reason)
	if err := g.SetDraining(ctx, true); err != nil {
		n.log.Warn("draining: announce it in gossip", "err", err)
	}
	if n.exec != nil {
		t := time.NewTicker(drainPoll)
		defer t.Stop()
		for n.exec.Stats().Running > 0 {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
	if err := g.Leave(ctx); err != nil {
		n.log.Warn("draining: leave the gossip group", "err", err)
		return
	}
	n.log.Info("drained: left the cluster; stop the process when convenient")
}
