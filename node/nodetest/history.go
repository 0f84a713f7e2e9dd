package nodetest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/natsauth"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// History shapes a synthetic history: Runs finished runs of Steps noop
// steps each (50 independent chains, like the benchmarks' plans).
type History struct {
	Runs  int
	Steps int
	// Epoch is the leader epoch the decisions carry: the epoch in force in
	// the ledger the history lands on (NodeInfo.Epoch), so that nothing is
	// fenced and the node's next lease still wins with a newer one.
	Epoch uint64
	// Batch is how many events of one type travel in one signed message
	// (default 200), as a busy outbox packs them.
	Batch int
}

// HistoryWriter signs histories with identities issued by a cluster's
// root, as that cluster's operator, planner, orchestrator and executor
// would have produced them.
type HistoryWriter struct {
	op, planner, orch, exec *trust.Identity
}

// NewHistoryWriter issues the identities from root (which must hold its
// private key: trust.LoadRoot on a data dir bootstrapped by agentd).
func NewHistoryWriter(root *trust.Root) (*HistoryWriter, error) {
	w := &HistoryWriter{}
	for _, id := range []struct {
		p     **trust.Identity
		name  string
		kind  string
		roles []string
	}{
		{&w.op, "history-operator", trust.KindOperator, []string{event.RoleOperator}},
		{&w.planner, "history-planner", trust.KindNode, []string{event.RolePlanner}},
		{&w.orch, "history-orchestrator", trust.KindNode, []string{event.RoleOrchestrator}},
		{&w.exec, "history-executor", trust.KindNode, []string{event.RoleExecutor}},
	} {
		ident, err := trust.NewIdentity(root, id.name, id.kind, id.roles, 24*time.Hour)
		if err != nil {
			return nil, fmt.Errorf("nodetest: history identity %s: %w", id.name, err)
		}
		*id.p = ident
	}
	return w, nil
}

// Publish writes h onto the events stream through js and returns the
// number of events. The messages are published asynchronously and each is
// acknowledged before Publish returns.
func (w *HistoryWriter) Publish(ctx context.Context, js jetstream.JetStream, h History) (int, error) {
	if h.Batch <= 0 {
		h.Batch = 200
	}
	p := &publisher{js: js, batch: h.Batch}
	steps := noopPlan(h.Steps)
	for r := range h.Runs {
		run := event.NewID()
		// Runs are written one phase at a time, as a run unfolds.
		p.add(w.op, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: fmt.Sprintf("history run %d", r)}))
		p.add(w.planner, event.MustDraft(event.PlanProposed, run, event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Goal: "history", Steps: steps}}))
		p.add(w.orch, event.MustDraft(event.PlanAccepted, run, event.PlanAcceptedData{Decision: event.Decision{Epoch: h.Epoch}, Revision: 1}))
		for _, st := range steps {
			d := event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{Decision: event.Decision{Epoch: h.Epoch}, Step: st, Attempt: 1, Node: w.exec.ID})
			d.Target = w.exec.ID
			p.add(w.orch, d)
		}
		for _, st := range steps {
			p.add(w.exec, event.MustDraft(event.TaskStarted, run, event.TaskStartedData{Step: st.ID, Attempt: 1, Node: w.exec.ID}))
		}
		for _, st := range steps {
			p.add(w.exec, event.MustDraft(event.TaskFinished, run, event.TaskFinishedData{Step: st.ID, Attempt: 1, Node: w.exec.ID, Status: event.TaskSucceeded, Started: time.Now()}))
		}
		p.add(w.orch, event.MustDraft(event.RunFinished, run, event.RunFinishedData{Decision: event.Decision{Epoch: h.Epoch}, Status: event.RunSucceeded}))
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

// noopPlan is n noop steps in 50 chains.
func noopPlan(n int) []event.Step {
	const width = 50
	steps := make([]event.Step, n)
	for i := range steps {
		steps[i] = event.Step{ID: fmt.Sprintf("s%05d", i), Kind: event.KindNoop}
		if i >= width {
			steps[i].DependsOn = []string{steps[i-width].ID}
		}
	}
	return steps
}

// historyWindow bounds the messages published and not yet acknowledged.
const historyWindow = 64

// publisher packs consecutive drafts of one signer and subject into
// signed messages and publishes them asynchronously.
type publisher struct {
	js      jetstream.JetStream
	batch   int
	signer  *trust.Identity
	pending []event.Draft
	acks    []jetstream.PubAckFuture
	events  int
	err     error
}

func (p *publisher) add(signer *trust.Identity, d event.Draft) {
	if len(p.pending) > 0 && (p.signer != signer || p.pending[0].Subject() != d.Subject() || len(p.pending) >= p.batch) {
		p.flush()
	}
	p.signer = signer
	p.pending = append(p.pending, d)
}

func (p *publisher) flush() {
	if len(p.pending) == 0 || p.err != nil {
		return
	}
	raw, id, err := envelope.Sign(p.signer, p.pending)
	if err != nil {
		p.err = fmt.Errorf("nodetest: sign history: %w", err)
		return
	}
	msg := &nats.Msg{Subject: p.pending[0].Subject(), Data: raw, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	// A window of acknowledgements in flight: JetStream refuses a stream
	// more pending publishes than it buffers ("too many requests").
	if len(p.acks) >= historyWindow {
		if err := p.wait(context.Background()); err != nil {
			p.err = err
			return
		}
	}
	ack, err := p.js.PublishMsgAsync(msg, jetstream.WithStallWait(time.Minute))
	if err != nil {
		p.err = fmt.Errorf("nodetest: publish history: %w", err)
		return
	}
	p.acks = append(p.acks, ack)
	p.events += len(p.pending)
	p.pending = p.pending[:0]
}

// wait waits for every publish to be acknowledged, and fails if one was
// refused.
func (p *publisher) wait(ctx context.Context) error {
	if p.err != nil {
		return p.err
	}
	for _, ack := range p.acks {
		select {
		case <-ack.Ok():
		case err := <-ack.Err():
			return fmt.Errorf("nodetest: history message refused: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("nodetest: history not acknowledged: %w", ctx.Err())
		}
	}
	p.acks = p.acks[:0]
	return nil
}

// StoppedNodeBus starts a nats-server on the JetStream store of a stopped
// node's data directory (the node named name), in operator mode for the
// node's bundle as the node's own would be, and connects to it as the
// test harness (bustest.Harness; the data dir must hold root.key), so a
// test can read or change that node's streams while it is down. close
// shuts both down; call it before the node starts again.
func StoppedNodeBus(tb testing.TB, ctx context.Context, dataDir, name string) (conn *bus.Conn, close func()) {
	tb.Helper()
	b, err := natsauth.LoadBundle(dataDir)
	if err != nil {
		tb.Fatalf("nodetest: %v", err)
	}
	root, err := trust.LoadRoot(dataDir)
	if err != nil {
		tb.Fatalf("nodetest: %v", err)
	}
	store := filepath.Join(dataDir, "nats")
	v, err := b.Verify("")
	if err != nil {
		tb.Fatalf("nodetest: %v", err)
	}
	// A store written before NATS required credentials, as the node
	// itself would find it.
	if err := embedded.AdoptGlobalStore(store, v.Account.Subject); err != nil {
		tb.Fatalf("nodetest: %v", err)
	}
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: store, ServerName: name,
		Auth: func(o *server.Options) error { return embedded.OperatorOptions(o, b, filepath.Join(store, "jwt")) }})
	if err != nil {
		tb.Fatalf("nodetest: nats-server on %s: %v", dataDir, err)
	}
	conn = bustest.Harness(tb, bus.ConnConfig{Server: srv, Name: "nodetest"}, root)
	return conn, func() { conn.Close(); srv.Shutdown() }
}

// PublishHistory publishes h onto the events stream of a stopped node
// (data directory dataDir, named name), signed by identities its root
// issues, and returns the number of events.
func PublishHistory(tb testing.TB, ctx context.Context, dataDir, name string, h History) int {
	tb.Helper()
	conn, close := StoppedNodeBus(tb, ctx, dataDir, name)
	defer close()
	root, err := trust.LoadRoot(dataDir)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := NewHistoryWriter(root)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := w.Publish(ctx, conn.JS, h)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
