package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func gateEvent(run, step string) event.Event {
	d := event.MustDraft(event.GateOpened, run, event.GateOpenedData{
		Decision: event.Decision{Epoch: 2}, Step: step, Kind: event.GatePolicy, Subject: "sha256:abc",
		Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "rm -rf", Why: "recursive force delete"}, Approvals: 1,
	})
	return event.Event{ID: d.ID, Type: d.Type, Run: run, Node: "node-a", Time: d.Time, Data: d.Data}
}

// hook is a webhook that keeps the batches it receives, failing the first
// fail requests with 500.
type hook struct {
	*httptest.Server
	mu      sync.Mutex
	batches []Batch
	fail    atomic.Int32
	calls   atomic.Int32
}

func newHook(t *testing.T) *hook {
	h := &hook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		if h.fail.Add(-1) >= 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var b Batch
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &b); err != nil || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.batches = append(h.batches, b)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hook) got() []Batch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Batch(nil), h.batches...)
}

func start(t *testing.T, cfg Config) *Notifier {
	t.Helper()
	n := New(cfg)
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

func TestGatesAreBatchedToTheWebhook(t *testing.T) {
	h := newHook(t)
	n := start(t, Config{Webhook: h.URL + "/services/T000/B000/secret", Batch: 200 * time.Millisecond, Cluster: "prod", Node: "node-a"})
	n.Fold(gateEvent("run-0", "ignored")) // not live yet: a restore
	n.Settled(true)
	n.Fold(gateEvent("run-1", "clean"))
	n.Fold(gateEvent("run-2", "wipe"))
	poll.Eventually(t, 5*time.Second, "one batch", func() bool { return len(h.got()) == 1 })
	b := h.got()[0]
	if len(b.Gates) != 2 || b.Gates[0].Run != "run-1" || b.Gates[1].Step != "wipe" || b.Gates[0].Level != "high" ||
		b.Gates[0].Show != "agentctl gate show run-1 clean" || b.Cluster != "prod" ||
		!strings.Contains(b.Text, "2 gates opened in prod") || !strings.Contains(b.Text, "rule rm -rf") {
		t.Fatalf("batch = %+v", b)
	}
	if s := n.Stats(); s.Sent != 1 || s.Failed != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestOnlyTheLeaderNotifies(t *testing.T) {
	h := newHook(t)
	var leading atomic.Bool
	n := start(t, Config{Webhook: h.URL, Batch: 50 * time.Millisecond, Leading: leading.Load})
	n.Settled(true)
	n.Fold(gateEvent("run-1", "a"))
	leading.Store(true)
	n.Fold(gateEvent("run-2", "b"))
	poll.Eventually(t, 5*time.Second, "a batch", func() bool { return len(h.got()) == 1 })
	if g := h.got()[0].Gates; len(g) != 1 || g[0].Run != "run-2" {
		t.Fatalf("gates = %+v", g)
	}
}

func TestFailedSendsAreRetriedThenCounted(t *testing.T) {
	h := newHook(t)
	h.fail.Store(2) // two failures, then success
	n := start(t, Config{Webhook: h.URL, Batch: 10 * time.Millisecond})
	n.Settled(true)
	n.Fold(gateEvent("run-1", "a"))
	poll.Eventually(t, 10*time.Second, "the batch after two failures", func() bool { return len(h.got()) == 1 })
	if h.calls.Load() != 3 || n.Stats().Sent != 1 {
		t.Fatalf("calls %d, stats %+v", h.calls.Load(), n.Stats())
	}
	h.fail.Store(100) // always failing
	n.Fold(gateEvent("run-2", "b"))
	poll.Eventually(t, 10*time.Second, "the failure counted", func() bool { return n.Stats().Failed == 1 })
	if h.calls.Load() != 6 {
		t.Fatalf("calls %d, want 3 more attempts", h.calls.Load())
	}
}

func TestExecHookGetsTheBatchOnStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gates.json")
	n := start(t, Config{Exec: "cat > " + out, Batch: 10 * time.Millisecond})
	n.Settled(true)
	n.Fold(gateEvent("run-1", "clean"))
	var b Batch
	poll.Eventually(t, 5*time.Second, "the hook's file", func() bool {
		data, err := os.ReadFile(out)
		return err == nil && json.Unmarshal(data, &b) == nil && len(b.Gates) == 1
	})
	if b.Gates[0].Step != "clean" {
		t.Fatalf("batch = %+v", b)
	}
}

func TestStopSendsWhatIsPending(t *testing.T) {
	h := newHook(t)
	n := New(Config{Webhook: h.URL, Batch: time.Hour})
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.Settled(true)
	n.Fold(gateEvent("run-1", "a"))
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(h.got()) != 1 {
		t.Fatalf("batches after Stop: %d", len(h.got()))
	}
}

func TestDisabledNotifierDoesNothing(t *testing.T) {
	n := start(t, Config{})
	n.Settled(true)
	n.Fold(gateEvent("run-1", "a"))
	if n.Enabled() || len(n.pending) != 0 {
		t.Fatal("a notifier without targets queued a gate")
	}
}

func TestWebhookSecretStaysOutOfErrors(t *testing.T) {
	if got := redactURL("https://hooks.slack.com/services/T0/B0/XXXXsecret"); got != "https://hooks.slack.com/…" {
		t.Fatalf("redactURL = %q", got)
	}
}

// TestProposalsAreSentThroughTheHooks: the improvement loop's news goes
// out through the same webhook as one batch of its severity.
func TestProposalsAreSentThroughTheHooks(t *testing.T) {
	h := newHook(t)
	n := New(Config{Webhook: h.URL, Cluster: "prod", Node: "node-a"})
	n.SendProposals(context.Background(), "high", []Proposal{
		{ID: "p-1", Status: "pending", Pattern: "gates_approved", Risk: "high", Severity: "high", Show: "agentctl proposal show p-1"},
		{ID: "p-2", Status: "reverted", Pattern: "timeouts", Risk: "medium", Severity: "high", Show: "agentctl proposal show p-2"},
	})
	got := h.got()
	if len(got) != 1 {
		t.Fatalf("%d batches, want 1", len(got))
	}
	b := got[0]
	if b.Severity != "high" || len(b.Proposals) != 2 || b.Proposals[1].Status != "reverted" || len(b.Gates) != 0 ||
		!strings.Contains(b.Text, "2 high proposal update(s) on cluster prod") || !strings.Contains(b.Text, "agentctl proposal show p-1") {
		t.Fatalf("batch = %+v", b)
	}
	New(Config{}).SendProposals(context.Background(), "low", []Proposal{{ID: "p-3"}}) // nowhere to send: nothing happens
}
