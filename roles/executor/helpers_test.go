package executor

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/embedded"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest"
	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/executor/runner"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a real JetStream server, an orchestrator identity to sign
// decisions with, and a directory the test steps write markers into.
type harness struct {
	t        testing.TB
	srv      *embedded.Server
	js       jetstream.JetStream
	ids      *bustest.Identities
	orch     *trust.Identity
	verifier *envelope.Verifier
	work     string
	// logs, when set, also receives every executor's log records (at
	// info and above).
	logs io.Writer
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	srv := bustest.Server(t)
	c := bustest.Connect(t, srv)
	ids := bustest.NewIdentities(t)
	return &harness{
		t:        t,
		srv:      srv,
		js:       c.JS,
		ids:      ids,
		orch:     ids.Node(t, "orch-1", event.RoleOrchestrator),
		verifier: envelope.NewVerifier(ids.Root),
		work:     t.TempDir(),
	}
}

// recorder is the executor's emitter: it keeps the drafts, and calls
// onDraft (if set) for each before returning.
type recorder struct {
	mu      sync.Mutex
	drafts  []event.Draft
	onDraft func(event.Draft)
}

func (r *recorder) Emit(_ context.Context, drafts ...event.Draft) error {
	r.mu.Lock()
	r.drafts = append(r.drafts, drafts...)
	f := r.onDraft
	r.mu.Unlock()
	if f != nil {
		for _, d := range drafts {
			f(d)
		}
	}
	return nil
}

var _ roles.Emitter = (*recorder)(nil)

// finished returns the task.finished payloads emitted for step.
func (r *recorder) finished(step string) []event.TaskFinishedData {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.TaskFinishedData
	for _, d := range r.drafts {
		if d.Type != event.TaskFinished {
			continue
		}
		ev := event.Event{Type: d.Type, Data: d.Data}
		var f event.TaskFinishedData
		if ev.Decode(&f) == nil && f.Step == step {
			out = append(out, f)
		}
	}
	return out
}

// started reports whether a task.started was emitted for step.
func (r *recorder) started(step string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.drafts {
		if d.Type != event.TaskStarted {
			continue
		}
		ev := event.Event{Type: d.Type, Data: d.Data}
		var s event.TaskStartedData
		if ev.Decode(&s) == nil && s.Step == step {
			return true
		}
	}
	return false
}

// start starts an executor for node with its state in stateDir; the test's
// cleanup stops it.
func (h *harness) start(node, stateDir string, rec *recorder, tweak func(*Config)) *Executor {
	h.t.Helper()
	return h.startWith(node, stateDir, rec, tweak)
}

// startWith is start with any emitter.
func (h *harness) startWith(node, stateDir string, rec roles.Emitter, tweak func(*Config)) *Executor {
	h.t.Helper()
	cfg := Config{
		JS: h.js, Verifier: h.verifier, StateDir: stateDir, Slots: 2,
		Runner:      runner.Options{DefaultCwd: h.work, KillGrace: 200 * time.Millisecond},
		Incarnation: "inc-" + node,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if h.logs != nil {
		logger = slog.New(slog.NewTextHandler(h.logs, nil))
	}
	ex := New(roles.Env{Node: node, Logger: logger.With("node", node), Emit: rec}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		h.t.Fatalf("start executor %s: %v", node, err)
	}
	h.t.Cleanup(func() { h.stop(ex, 10*time.Second) })
	return ex
}

// stop stops ex, giving running steps d to finish.
func (h *harness) stop(ex *Executor, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return ex.Stop(ctx)
}

func (h *harness) publish(d event.Draft) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, h.js, h.orch, d); err != nil {
		h.t.Fatalf("publish %s: %v", d.Type, err)
	}
}

// elect publishes a leader.elected of epoch.
func (h *harness) elect(epoch uint64) {
	h.t.Helper()
	h.publish(event.MustDraft(event.LeaderElected, "", event.LeaderElectedData{Decision: event.Decision{Epoch: epoch}, Leader: "orch-1"}))
}

// assign publishes a task.assigned to node of a shell step that touches
// the marker file named after the step, made by a leader of epoch.
func (h *harness) assign(node, run, step string, epoch uint64, script string) {
	h.t.Helper()
	if script == "" {
		script = "touch " + h.marker(step)
	}
	d := event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{
		Decision: event.Decision{Epoch: epoch}, Attempt: 1, Node: node,
		Step: event.Step{ID: step, Kind: event.KindShell, Run: script},
	})
	d.Target = node
	h.publish(d)
}

// assignNoop publishes a task.assigned to node of a noop step.
func (h *harness) assignNoop(node, run, step string, epoch uint64) {
	h.t.Helper()
	d := event.MustDraft(event.TaskAssigned, run, event.TaskAssignedData{
		Decision: event.Decision{Epoch: epoch}, Attempt: 1, Node: node,
		Step: event.Step{ID: step, Kind: event.KindNoop},
	})
	d.Target = node
	h.publish(d)
}

// cancel publishes a task.cancel of attempt 1 of step, made by a leader of
// epoch.
func (h *harness) cancel(node, run, step string, epoch uint64) {
	h.t.Helper()
	d := event.MustDraft(event.TaskCancel, run, event.TaskCancelData{
		Decision: event.Decision{Epoch: epoch}, Step: step, Attempt: 1, Node: node, Reason: "test",
	})
	d.Target = node
	h.publish(d)
}

func (h *harness) marker(step string) string { return filepath.Join(h.work, step+".done") }

func (h *harness) ran(step string) bool {
	_, err := os.Stat(h.marker(step))
	return err == nil
}

// consumerInfo reads the executor consumer of node.
func (h *harness) consumerInfo(node string) *jetstream.ConsumerInfo {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := h.js.Consumer(ctx, bus.EventsStream, ConsumerName(node))
	if err != nil {
		h.t.Fatalf("consumer of %s: %v", node, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		h.t.Fatalf("consumer info of %s: %v", node, err)
	}
	return info
}

// lastSeq is the last sequence of the events stream.
func (h *harness) lastSeq() uint64 {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := h.js.Stream(ctx, bus.EventsStream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return info.State.LastSeq
}

// cancelAttempt publishes a task.cancel of attempt of step with code,
// made by a leader of epoch.
func (h *harness) cancelAttempt(node, run, step string, attempt int, epoch uint64, code string) {
	h.t.Helper()
	d := event.MustDraft(event.TaskCancel, run, event.TaskCancelData{
		Decision: event.Decision{Epoch: epoch}, Step: step, Attempt: attempt, Node: node, Reason: "test", Code: code,
	})
	d.Target = node
	h.publish(d)
}

// drain publishes a node.drain for node, signed by an operator.
func (h *harness) drain(node, reason string) {
	h.t.Helper()
	op := h.ids.Node(h.t, "op-1", event.RoleOperator)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, h.js, op, event.MustDraft(event.NodeDrain, "", event.NodeDrainData{Node: node, Reason: reason})); err != nil {
		h.t.Fatalf("publish node.drain: %v", err)
	}
}

// gate is a step script that leaves its marker and then runs until
// release(step) is called.
func (h *harness) gate(step string) string {
	rel := filepath.Join(h.work, step+".release")
	return "touch " + h.marker(step) + "; while [ ! -e " + rel + " ]; do sleep 0.02; done"
}

// release ends a gate step.
func (h *harness) release(step string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.work, step+".release"), nil, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// online returns the executor.online payloads emitted.
func (r *recorder) online() []event.ExecutorOnlineData {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.ExecutorOnlineData
	for _, d := range r.drafts {
		if d.Type != event.ExecutorOnline {
			continue
		}
		var o event.ExecutorOnlineData
		ev := event.Event{Type: d.Type, Data: d.Data}
		if ev.Decode(&o) == nil {
			out = append(out, o)
		}
	}
	return out
}

// startOrder lists the steps of the task.started emitted, in order.
func (r *recorder) startOrder() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.drafts {
		if d.Type != event.TaskStarted {
			continue
		}
		var s event.TaskStartedData
		ev := event.Event{Type: d.Type, Data: d.Data}
		if ev.Decode(&s) == nil {
			out = append(out, s.Step)
		}
	}
	return out
}

// deleteConsumer deletes the executor consumer of node.
func (h *harness) deleteConsumer(node string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.js.DeleteConsumer(ctx, bus.EventsStream, ConsumerName(node)); err != nil {
		h.t.Fatalf("delete consumer of %s: %v", node, err)
	}
}
