// Package notify tells people that a gate opened: a step (or a plan) waits
// for an operator's approval. Gates left unseen time out or hold a run for
// nothing, so a node sends each gate.opened it folds, batched, to a
// webhook (an HTTP POST of JSON, which Slack-style incoming webhooks also
// show through its "text") and/or to an exec hook (a shell command given
// the same JSON on stdin).
//
// Only the leader orchestrator's node notifies (Config.Leading), so a
// cluster sends each gate once — at least once: a gate opened just as the
// lead moves may be sent by both leaders, or, if the old leader crashed
// with its batch unsent, by neither; `agentctl gate ls` and the
// agentic_gates_open_oldest_seconds metric are the reliable views.
//
// Invariants:
//
//  1. Fold never blocks: a gate is queued (up to MaxPending, older ones
//     counted as dropped) and sent from the notifier's goroutine.
//  2. Nothing is sent for events folded while the node restores or catches
//     up (Settled(false)): a restart does not replay old notifications.
//  3. A batch is sent at most Batch after its first gate; a failed send is
//     retried (3 attempts, backoff) and then logged and counted, never
//     retried for ever.
//  4. Stop ends the goroutine and the hooks it started; a batch still
//     pending is sent within the Stop context when it can be.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Defaults.
const (
	// DefaultBatch is how long gates are collected before they are sent.
	DefaultBatch = 5 * time.Second
	// DefaultTimeout bounds one send (a POST or a hook's run).
	DefaultTimeout = 10 * time.Second
	// MaxPending caps the gates waiting to be sent.
	MaxPending = 1000
	// attempts is how many times a batch is tried on each target.
	attempts = 3
)

// Config configures a Notifier.
type Config struct {
	// Webhook is a URL the batch is POSTed to as JSON; empty: none.
	Webhook string
	// Exec is a shell command (/bin/sh -c) run with the batch's JSON on
	// stdin; empty: none.
	Exec string
	// Batch is how long gates are collected (DefaultBatch when zero).
	Batch time.Duration
	// Timeout bounds one send (DefaultTimeout when zero).
	Timeout time.Duration
	// Leading reports whether this node leads; only the leader notifies.
	// Nil: always.
	Leading func() bool
	// Cluster names the cluster in messages (the NATS cluster name).
	Cluster string
	// Node is this node's name.
	Node   string
	Logger *slog.Logger
	// Client sends the webhook (http.DefaultClient's transport when nil).
	Client *http.Client
}

// Gate is one opened gate as a notification carries it.
type Gate struct {
	Run      string          `json:"run"`
	Step     string          `json:"step,omitempty"`
	Kind     event.GateKind  `json:"kind"`
	Level    string          `json:"level,omitempty"`
	Rule     string          `json:"rule,omitempty"`
	Why      string          `json:"why,omitempty"`
	Subject  string          `json:"subject"`
	Policy   event.PolicyRef `json:"policy,omitzero"`
	Approval int             `json:"approvals"`
	Opened   time.Time       `json:"opened"`
	Expires  time.Time       `json:"expires,omitzero"`
	// Show is the command to look at it with.
	Show string `json:"show"`
}

// Batch is what one notification carries.
type Batch struct {
	// Text is a one-paragraph summary for chat webhooks.
	Text    string `json:"text"`
	Cluster string `json:"cluster,omitempty"`
	Node    string `json:"node"`
	Gates   []Gate `json:"gates"`
	// Dropped counts gates not sent because too many were pending.
	Dropped int `json:"dropped,omitempty"`
	// Proposals is news of the self-improvement loop's proposals
	// (docs/improve.md), of one Severity, sent by SendProposals.
	Proposals []Proposal `json:"proposals,omitempty"`
	Severity  string     `json:"severity,omitempty"`
}

// Proposal is one piece of news about a proposal: created, approved,
// applied, implemented, reverted.
type Proposal struct {
	ID       string    `json:"id"`
	Status   string    `json:"status"`
	Pattern  string    `json:"pattern"`
	Subject  string    `json:"subject"`
	Risk     string    `json:"risk"`
	Severity string    `json:"severity"`
	Summary  string    `json:"summary"`
	At       time.Time `json:"at"`
	// Show is the command to look at it with.
	Show string `json:"show"`
}

// SendProposals sends news of proposals of one severity now, through the
// same hooks as the gates: the caller batches them (critical at once,
// high hourly, the rest daily: roles/improve.Digest). A failed send is
// retried, then logged and counted, as a gates batch is.
func (n *Notifier) SendProposals(ctx context.Context, severity string, ps []Proposal) {
	if !n.Enabled() || len(ps) == 0 {
		return
	}
	text := fmt.Sprintf("agentic: %d %s proposal update(s)", len(ps), severity)
	if n.cfg.Cluster != "" {
		text += " on cluster " + n.cfg.Cluster
	}
	for i, p := range ps {
		if i == 5 {
			text += fmt.Sprintf("; and %d more", len(ps)-5)
			break
		}
		text += fmt.Sprintf("; %s %s (%s): %s", p.ID, p.Status, p.Risk, p.Show)
	}
	n.send(ctx, Batch{Text: text, Cluster: n.cfg.Cluster, Node: n.cfg.Node, Gates: []Gate{}, Proposals: ps, Severity: severity})
}

// Stats counts what a Notifier did since it started.
type Stats struct {
	Sent, Failed, Dropped uint64
}

// Notifier sends the gates a node folds. It is a roles.Folder and a
// roles.Role.
type Notifier struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{}

	mu      sync.Mutex
	live    bool
	pending []Gate
	first   time.Time // when the oldest pending gate was queued
	dropped int

	sent, failed, droppedTotal atomic.Uint64

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Notifier; it sends nothing until Start, and nothing at all
// when cfg names neither a webhook nor a hook (Enabled).
func New(cfg Config) *Notifier {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &Notifier{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
}

// Enabled reports whether there is anywhere to send to.
func (n *Notifier) Enabled() bool { return n.cfg.Webhook != "" || n.cfg.Exec != "" }

// Name is "notify".
func (n *Notifier) Name() string { return "notify" }

// Stats returns the counts so far.
func (n *Notifier) Stats() Stats {
	return Stats{Sent: n.sent.Load(), Failed: n.failed.Load(), Dropped: n.droppedTotal.Load()}
}

// Fold queues a gate.opened folded while live and leading.
func (n *Notifier) Fold(ev event.Event) {
	if ev.Type != event.GateOpened || !n.Enabled() {
		return
	}
	n.mu.Lock()
	live := n.live
	n.mu.Unlock()
	if !live || (n.cfg.Leading != nil && !n.cfg.Leading()) {
		return
	}
	var d event.GateOpenedData
	if err := ev.Decode(&d); err != nil {
		n.log.Warn("notify: undecodable gate.opened", "event", ev.ID, "err", err)
		return
	}
	g := Gate{Run: ev.Run, Step: d.Step, Kind: d.Kind, Subject: d.Subject, Policy: d.Policy,
		Approval: d.Approvals, Opened: ev.Time, Expires: d.Expires, Show: "agentctl gate show " + ev.Run + " " + d.Step}
	if d.Step == "" {
		g.Show = "agentctl gate ls --run " + ev.Run
	}
	if v := d.Verdict; v != nil {
		g.Level, g.Rule, g.Why = v.Level, v.Rule, v.Why
	}
	n.mu.Lock()
	if len(n.pending) >= MaxPending {
		n.pending = n.pending[1:]
		n.dropped++
		n.droppedTotal.Add(1)
	}
	if len(n.pending) == 0 {
		n.first = time.Now()
	}
	n.pending = append(n.pending, g)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Settled records whether the node is live: only gates folded live are
// sent.
func (n *Notifier) Settled(live bool) {
	n.mu.Lock()
	n.live = live
	n.mu.Unlock()
}

// Start begins the sending goroutine.
func (n *Notifier) Start(ctx context.Context) error {
	n.runMu.Lock()
	defer n.runMu.Unlock()
	if n.cancel != nil || !n.Enabled() {
		return nil
	}
	ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	n.done = make(chan struct{})
	go n.loop(ctx)
	return nil
}

// Stop ends the goroutine, sending a pending batch within ctx if it can.
func (n *Notifier) Stop(ctx context.Context) error {
	n.runMu.Lock()
	defer n.runMu.Unlock()
	if n.cancel == nil {
		return nil
	}
	n.cancel()
	<-n.done
	n.cancel = nil
	if b, ok := n.take(); ok {
		n.send(ctx, b)
	}
	return nil
}

func (n *Notifier) loop(ctx context.Context) {
	defer close(n.done)
	var timer *time.Timer
	var tick <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-n.wake:
			if tick == nil {
				n.mu.Lock()
				wait := n.cfg.Batch - time.Since(n.first)
				n.mu.Unlock()
				timer = time.NewTimer(max(wait, 0))
				tick = timer.C
			}
		case <-tick:
			tick, timer = nil, nil
			if b, ok := n.take(); ok {
				n.send(ctx, b)
			}
		}
	}
}

// take empties the queue into a batch.
func (n *Notifier) take() (Batch, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending) == 0 {
		return Batch{}, false
	}
	b := Batch{Cluster: n.cfg.Cluster, Node: n.cfg.Node, Gates: n.pending, Dropped: n.dropped}
	n.pending, n.dropped = nil, 0
	b.Text = summary(b)
	return b, true
}

// summary is the batch in a sentence or a few lines.
func summary(b Batch) string {
	var s strings.Builder
	where := ""
	if b.Cluster != "" {
		where = " in " + b.Cluster
	}
	if len(b.Gates) == 1 {
		fmt.Fprintf(&s, "A gate opened%s and waits for approval:", where)
	} else {
		fmt.Fprintf(&s, "%d gates opened%s and wait for approval:", len(b.Gates), where)
	}
	for i, g := range b.Gates {
		if i == 10 {
			fmt.Fprintf(&s, "\n… and %d more (agentctl gate ls)", len(b.Gates)-i)
			break
		}
		what := "plan of run " + g.Run
		if g.Step != "" {
			what = "step " + g.Step + " of run " + g.Run
		}
		fmt.Fprintf(&s, "\n• %s", what)
		if g.Level != "" {
			fmt.Fprintf(&s, " (%s, rule %s)", g.Level, g.Rule)
		}
		if g.Kind == event.GateNeedsDecision {
			s.WriteString(" (may have partly run on a lost node)")
		}
		fmt.Fprintf(&s, ": %s", g.Show)
	}
	if b.Dropped > 0 {
		fmt.Fprintf(&s, "\n(%d more were not sent: too many at once)", b.Dropped)
	}
	return s.String()
}

// target is one place a batch goes.
type target struct {
	name string
	fn   func(context.Context, []byte) error
}

// send delivers b to every target, each tried up to attempts times.
func (n *Notifier) send(ctx context.Context, b Batch) {
	body, err := json.Marshal(b)
	if err != nil {
		n.log.Error("notify: encode", "err", err)
		return
	}
	var targets []target
	if n.cfg.Webhook != "" {
		targets = append(targets, target{"webhook", n.post})
	}
	if n.cfg.Exec != "" {
		targets = append(targets, target{"exec", n.exec})
	}
	for _, t := range targets {
		var err error
		backoff := 500 * time.Millisecond
		for a := 1; a <= attempts; a++ {
			sctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
			err = t.fn(sctx, body)
			cancel()
			if err == nil || ctx.Err() != nil || a == attempts {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff *= 2
		}
		if err != nil {
			n.failed.Add(1)
			n.log.Error("notify: could not send the gates", "target", t.name, "gates", len(b.Gates), "err", err)
			continue
		}
		n.sent.Add(1)
		n.log.Info("notify: gates sent", "target", t.name, "gates", len(b.Gates))
	}
}

// post sends body to the webhook.
func (n *Notifier) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.cfg.Webhook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", redactURL(n.cfg.Webhook), err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", redactURL(n.cfg.Webhook), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: status %s", redactURL(n.cfg.Webhook), resp.Status)
	}
	return nil
}

// exec runs the hook with body on stdin.
func (n *Notifier) exec(ctx context.Context, body []byte) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", n.cfg.Exec)
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tail := strings.TrimSpace(string(out))
		if len(tail) > 512 {
			tail = tail[len(tail)-512:]
		}
		return fmt.Errorf("exec hook: %w: %s", err, tail)
	}
	return nil
}

// redactURL keeps a webhook's secret path (Slack's token) out of logs.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return "(webhook)"
	}
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host + "/…"
}
