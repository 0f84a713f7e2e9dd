package improve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
	"github.com/agentic-dev/agentic/roles/policy"
)

// DefaultEvery is how often the leader evaluates when no improve.eval set
// an interval.
const DefaultEvery = tuning.DefaultEvery

// DefaultTick is how often the loop looks whether something is due.
const DefaultTick = time.Second

// inflight is how long the loop waits for an event it emitted to come
// back folded before it emits it again.
const inflight = 30 * time.Second

// Config configures a Loop.
type Config struct {
	// Node is this node's id (the signer of what it emits).
	Node string
	// Emit queues the loop's events; nil on a node that only folds (a
	// planner or memory node: it answers queries and gives planners
	// their notes).
	Emit roles.Emitter
	// Leading reports whether this node is the leader orchestrator: only
	// the leader evaluates, applies, monitors and notifies.
	Leading func() bool
	// Epoch, when set, is the leader epoch this node leads with (0: it
	// does not lead; the orchestrator's Leader): the loop acts only with
	// one, no older than the newest leader.elected its fold holds, and
	// stamps what it emits with it, so that a deposed leader's late
	// proposals and applies are fenced by every fold.
	Epoch func() uint64
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
	// Rules and Monitor are the thresholds (DefaultRules, DefaultMonitor
	// when zero).
	Rules   Rules
	Monitor Monitor
	// Window is the telemetry window (DefaultWindow when zero).
	Window time.Duration
	// Ledger, when set (a node's ledger), is where the leader reads the
	// window for an evaluation or a validation, and the attempts after an
	// applied proposal for the monitor: the loop then keeps no window (a
	// follower nothing, the leader only its monitor's few attempts). Nil:
	// the window is folded as events come and kept (tools, tests).
	Ledger Ledger
	// Tick is how often the loop looks (DefaultTick when zero).
	Tick time.Duration
	// Digest, when set, gets the news of the proposals (notify).
	Digest *Digest
	// Drafter, when set (a node with a planner model), drafts the text
	// of new proposals and, optionally, a change of the rule's kind; a
	// model that fails or hangs leaves the rules' text (docs/improve.md).
	Drafter *Drafter
}

// Loop is the self-improvement loop of a node: a roles.Folder that folds
// the proposals and the settings they change (and, without a Ledger, the
// telemetry window), and, on the leader orchestrator, a goroutine that
// evaluates on schedule (or when asked) the window it reads from the
// ledger, applies approved proposals after validating them again,
// monitors applied ones and reverts those that made things worse.
type Loop struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{}

	// mu guards what Fold changes: the proposals and settings, the
	// policy in force, and the events the telemetry has yet to fold.
	// Fold holds it only briefly: it never waits for an evaluation.
	mu struct {
		sync.Mutex
		state   *State
		pol     *policy.Policy
		polText string
		live    bool
		// pending are the events folded live that the telemetry window
		// has yet to take (Step drains them).
		pending []event.Event
	}
	// tm guards the telemetry window and what only Step uses; Step holds
	// it for a whole turn (an evaluation included), and takes mu inside
	// it when it needs the state (lock order: tm, then mu).
	tm struct {
		sync.Mutex
		// tel is the window folded as events come, without a Ledger
		// only.
		tel *Telemetry
		// watch is the monitor's, with a Ledger, while a proposal is
		// applied (nil otherwise).
		watch *watch
		// lastEval is when the leader last evaluated; evalSeq the
		// improve.eval it answered.
		lastEval time.Time
		evalSeq  uint64
		sent     map[string]time.Time
		notified map[string]Status
		// epoch is the leader epoch of the turn under way (stamped on
		// what it emits).
		epoch uint64
	}

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ roles.Snapshotter = (*Loop)(nil)
	_ roles.Role        = (*Loop)(nil)
)

// New returns a Loop; it starts nothing.
func New(cfg Config) *Loop {
	if cfg.Rules == (Rules{}) {
		cfg.Rules = DefaultRules()
	}
	if cfg.Monitor == (Monitor{}) {
		cfg.Monitor = DefaultMonitor()
	}
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Loop{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
	l.mu.state = NewState()
	l.tm.tel = NewTelemetry(cfg.Window, 0)
	l.tm.sent = map[string]time.Time{}
	l.tm.notified = map[string]Status{}
	return l
}

// Name is "improve".
func (l *Loop) Name() string { return "improve" }

// Fold folds one committed event.
func (l *Loop) Fold(ev event.Event) {
	l.mu.Lock()
	changed := l.mu.state.Apply(ev)
	// Live, the telemetry's events wait for Step (which may be in an
	// evaluation); while the node restores they are folded at once, in
	// order (pending is empty then).
	keep := l.cfg.Emit != nil && l.cfg.Ledger == nil && telemetryType(ev.Type)
	queue := keep && (l.mu.live || len(l.mu.pending) > 0)
	if queue {
		l.mu.pending = append(l.mu.pending, ev)
	}
	if ev.Type == event.PolicyApplied || ev.Type == event.PolicyRecorded {
		var cur int64
		if l.mu.pol != nil {
			cur = l.mu.pol.Version
		}
		if p, d, err := policy.Applied(cur, ev); err == nil {
			l.mu.pol, l.mu.polText = p, d.Text
		}
	}
	l.mu.Unlock()
	if keep && !queue {
		l.tm.Lock()
		l.tm.tel.Fold(ev)
		l.tm.Unlock()
	}
	if changed {
		l.kick()
	}
}

// telemetryType reports whether the telemetry window folds events of t.
func telemetryType(t event.Type) bool {
	switch t {
	case event.GoalSubmitted, event.PlanProposed, event.TaskAssigned, event.TaskFinished, event.GateOpened,
		event.GateDecided, event.GateDecidedFor, event.PlanReplanRequested, event.RunFinished, event.RunRated:
		return true
	}
	return false
}

// SnapshotName is "improve".
func (l *Loop) SnapshotName() string { return "improve" }

// Snapshot saves the proposals and settings. Not the telemetry window:
// with a Ledger it is read from the ledger when needed, so a restart or a
// leader change loses nothing; without one, after a restart it holds the
// events after the snapshot.
func (l *Loop) Snapshot() (uint64, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := json.Marshal(l.mu.state)
	if err != nil {
		return 0, nil, fmt.Errorf("improve: snapshot: %w", err)
	}
	return l.mu.state.Seq, b, nil
}

// Restore replaces the proposals and settings with a snapshot's.
func (l *Loop) Restore(data []byte) error {
	s := NewState()
	if err := json.Unmarshal(data, s); err != nil {
		return fmt.Errorf("improve: restore: %w", err)
	}
	if s.Proposals == nil {
		s.Proposals = map[string]*Proposal{}
	}
	if s.Retired == nil {
		s.Retired = map[string]bool{}
	}
	if s.Defaults == nil {
		s.Defaults = map[string]event.StepDefaults{}
	}
	l.mu.Lock()
	l.mu.state = s
	l.mu.Unlock()
	return nil
}

// Settled records whether the node is live: the loop acts only then.
func (l *Loop) Settled(live bool) {
	l.mu.Lock()
	l.mu.live = live
	l.mu.Unlock()
	if live {
		l.kick()
	}
}

func (l *Loop) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Start begins the leader's goroutine on a node that emits.
func (l *Loop) Start(ctx context.Context) error {
	l.runMu.Lock()
	defer l.runMu.Unlock()
	if l.cancel != nil || l.cfg.Emit == nil {
		return nil
	}
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	go l.run(ctx)
	return nil
}

// Stop ends the goroutine and waits for it.
func (l *Loop) Stop(ctx context.Context) error {
	l.runMu.Lock()
	defer l.runMu.Unlock()
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("improve: stop: %w", ctx.Err())
	}
	l.cancel = nil
	return nil
}

func (l *Loop) run(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.wake:
		}
		if err := l.Step(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("improve: step", "err", err)
		}
	}
}

// Step does what is due once: evaluate, apply, judge, notify. The loop
// calls it on every tick and fold; tests call it directly. It does
// nothing unless the node is live and leads.
func (l *Loop) Step(ctx context.Context) error {
	if l.cfg.Emit == nil {
		return nil
	}
	l.tm.Lock()
	drafts, ok := l.turnLocked(ctx)
	l.tm.Unlock()
	if !ok {
		return nil
	}
	var err error
	if len(drafts) > 0 {
		if err = l.cfg.Emit.Emit(ctx, drafts...); err != nil {
			err = fmt.Errorf("improve: emit %d events: %w", len(drafts), err)
		}
	}
	if d := l.cfg.Digest; d != nil {
		err = errors.Join(err, d.Flush(ctx))
	}
	return err
}

// turnLocked (tm held) folds the pending events into the telemetry and,
// on the live leader, returns the events due; ok is false when the node
// is not the live leader. With a Ledger, it reads the window only when an
// evaluation is due or an approved proposal is to be validated, and drops
// it at the end of the turn.
func (l *Loop) turnLocked(ctx context.Context) (drafts []event.Draft, ok bool) {
	l.mu.Lock()
	evs := l.mu.pending
	l.mu.pending = nil
	l.mu.Unlock()
	for _, ev := range evs {
		l.tm.tel.Fold(ev)
	}
	if l.cfg.Leading != nil && !l.cfg.Leading() {
		l.tm.watch = nil
		return nil, false
	}
	var epoch uint64
	if l.cfg.Epoch != nil {
		if epoch = l.cfg.Epoch(); epoch == 0 {
			l.tm.watch = nil
			return nil, false
		}
	}
	now := l.cfg.Now()
	l.mu.Lock()
	if !l.mu.live || (l.cfg.Epoch != nil && epoch < l.mu.state.Epoch) {
		// Not live yet, or deposed: the ledger holds a newer leader.
		l.mu.Unlock()
		l.tm.watch = nil
		return nil, false
	}
	l.tm.epoch = epoch
	st := l.mu.state
	every := st.Every.Std()
	if every <= 0 {
		every = DefaultEvery
	}
	var in Input
	due := st.EvalAsked > l.tm.evalSeq || l.tm.lastEval.IsZero() || now.Sub(l.tm.lastEval) >= every
	if due {
		l.tm.evalSeq, l.tm.lastEval = st.EvalAsked, now
		in = Input{Now: now, State: st.Clone(), Policy: l.mu.pol, PolicyText: l.mu.polText}
	}
	upto := st.Seq
	needWindow := due || l.validatesLocked(now)
	var applied map[string]watched
	if l.cfg.Ledger != nil {
		applied = appliedOf(st)
	}
	l.mu.Unlock()
	// Without mu: Fold goes on meanwhile.
	var win *Telemetry
	if needWindow {
		var err error
		if win, err = l.windowLocked(ctx, now, upto); err != nil {
			l.log.Warn("improve: could not read the telemetry window", "err", err)
			due = false
		}
	}
	if l.cfg.Ledger != nil {
		if err := l.watchLocked(ctx, applied, upto, now); err != nil {
			l.log.Warn("improve: could not read the attempts the monitor watches", "err", err)
		}
	}
	if due {
		drafts = l.evaluateLocked(ctx, now, in, win)
	}
	l.mu.Lock()
	drafts = append(drafts, l.dueLocked(now, win)...)
	l.notifyLocked(now)
	l.mu.Unlock()
	return drafts, true
}

// windowLocked (tm held) is the window an evaluation or a validation
// reads: with a Ledger, read now up to position upto (the state's); the
// folded one otherwise.
func (l *Loop) windowLocked(ctx context.Context, now time.Time, upto uint64) (*Telemetry, error) {
	if l.cfg.Ledger == nil {
		l.tm.tel.Trim(now)
		return l.tm.tel, nil
	}
	return ReadWindow(ctx, l.cfg.Ledger, l.cfg.Window, now, upto)
}

// monitoredLocked (tm held) is the telemetry the monitor judges by: the
// watch's attempts with a Ledger (none while the watch is empty), the
// folded window otherwise.
func (l *Loop) monitoredLocked() *Telemetry {
	if l.cfg.Ledger == nil {
		return l.tm.tel
	}
	if l.tm.watch == nil {
		return &Telemetry{}
	}
	return l.tm.watch.tel
}

// validatesLocked (tm and mu held) reports whether an approved proposal
// is due to be validated at now (applyLocked would check it).
func (l *Loop) validatesLocked(now time.Time) bool {
	st := l.mu.state
	for _, id := range st.Order {
		p := st.Proposals[id]
		if p.Status != StatusApproved {
			continue
		}
		key := "change/" + p.ID
		if p.ChangeSeq != 0 {
			key = "applied/" + p.ID
		}
		if at, ok := l.tm.sent[key]; !ok || now.Sub(at) >= inflight {
			return true
		}
	}
	return false
}

// onceLocked (tm held) reports whether the event named key may be
// emitted now: not within inflight of the last time.
func (l *Loop) onceLocked(key string, now time.Time) bool {
	if at, ok := l.tm.sent[key]; ok && now.Sub(at) < inflight {
		return false
	}
	l.tm.sent[key] = now
	return true
}

// dueLocked (tm and mu held) returns the applies and judgements due at
// now; win is the window validations read (nil: none read this turn, the
// applies wait for the next).
func (l *Loop) dueLocked(now time.Time, win *Telemetry) []event.Draft {
	var out []event.Draft
	st := l.mu.state
	for _, id := range st.Order {
		p := st.Proposals[id]
		switch p.Status {
		case StatusApproved:
			if win != nil {
				out = append(out, l.applyLocked(p, now, win)...)
			}
		case StatusApplied:
			out = append(out, l.judgeLocked(p, now)...)
		}
	}
	return out
}

// evaluateLocked (tm held) runs the rules and drafts the new proposals:
// with a Drafter, the model words each (and may draft its change); once
// the model fails to answer, the rest of this evaluation keeps the rules'
// text.
func (l *Loop) evaluateLocked(ctx context.Context, now time.Time, in Input, win *Telemetry) []event.Draft {
	start := time.Now()
	found := Evaluate(l.cfg.Rules, win, in)
	var out []event.Draft
	modelDown := false
	for _, p := range found {
		if !l.onceLocked("created/"+p.ID, now) {
			continue
		}
		if d := l.cfg.Drafter; d != nil && d.Model != nil {
			if modelDown {
				p.DraftedBy, p.ChangeBy = event.DraftedByRules, event.DraftedByRules
				p.DraftNote = "the model's draft was not used: the model did not answer an earlier draft of this evaluation"
			} else {
				p, modelDown = d.draft(ctx, p, draftContext{attempts: win.Attempts, commands: win.Commands, pol: in.Policy})
			}
			if p.DraftNote != "" {
				l.log.Warn("improve: proposal drafted by the rules", "proposal", p.ID, "why", p.DraftNote)
			}
		}
		p.Epoch = l.tm.epoch
		out = append(out, event.MustDraft(event.ProposalCreated, "", p))
	}
	l.log.Info("improve: evaluated", "attempts", len(win.Attempts), "gates", len(win.Gates),
		"replans", len(win.Replans), "ratings", len(win.Ratings), "proposals", len(out), "took", time.Since(start))
	return out
}

// applyLocked validates an approved proposal again and drafts its change
// and proposal.applied, or its refusal (proposal.reverted).
func (l *Loop) applyLocked(p *Proposal, now time.Time, win *Telemetry) []event.Draft {
	if p.Change.Kind == event.ChangeRepository {
		return l.applyRepoLocked(p, now) // apply_repo.go
	}
	if p.ChangeSeq != 0 {
		if !l.onceLocked("applied/"+p.ID, now) {
			return nil
		}
		return []event.Draft{event.MustDraft(event.ProposalApplied, "", event.ProposalAppliedData{Proposal: p.ID, Validation: l.checkLocked(p, win), Epoch: l.tm.epoch})}
	}
	if !l.onceLocked("change/"+p.ID, now) {
		return nil
	}
	v, err := l.validateLocked(p, win)
	if err != nil {
		l.log.Warn("improve: an approved proposal is refused at apply", "proposal", p.ID, "err", err)
		return []event.Draft{event.MustDraft(event.ProposalReverted, "", event.ProposalOutcomeData{Proposal: p.ID,
			Baseline: p.Baseline, Threshold: l.cfg.Monitor.Threshold, Reason: "refused at apply: " + err.Error(), Epoch: l.tm.epoch})}
	}
	var change event.Draft
	if p.Change.Kind == event.ChangePolicy {
		pc := p.Change.Policy
		change = event.MustDraft(event.PolicyRecorded, "", event.PolicyAppliedData{Base: pc.Base, Name: l.mu.pol.Name, Hash: pc.Hash,
			Text: pc.Text, Source: event.PolicyFromProposal, Proposal: p.ID, Reason: "proposal " + p.ID + ": " + p.RootCause})
	} else {
		change = event.MustDraft(event.TuningChanged, "", event.TuningChangedData{Proposal: p.ID, Change: p.Change, Epoch: l.tm.epoch})
	}
	l.tm.sent["applied/"+p.ID] = now
	return []event.Draft{change, event.MustDraft(event.ProposalApplied, "", event.ProposalAppliedData{Proposal: p.ID, Validation: v, Epoch: l.tm.epoch})}
}

// checkLocked is the apply check of a proposal whose change is in force.
func (l *Loop) checkLocked(p *Proposal, win *Telemetry) event.Validation {
	v, err := l.validateLocked(p, win)
	if err != nil {
		v.Summary = "applied; a check again now says: " + err.Error()
	}
	return v
}

// validateLocked checks p against the state in force now: the forbidden
// changes, and per kind the replay (step defaults) or the re-judging
// (policy) of the window win, or the template in force (templates,
// apply_template.go); notes are checked by the forbidden-change rules
// only.
func (l *Loop) validateLocked(p *Proposal, win *Telemetry) (event.Validation, error) {
	if err := Forbidden(p.Change); err != nil {
		return event.Validation{}, err
	}
	if err := Forbidden(p.Rollback); err != nil {
		return event.Validation{}, fmt.Errorf("rollback: %w", err)
	}
	switch p.Change.Kind {
	case event.ChangeStepDefaults:
		return ReplayDefaults(p.Change, win.Attempts)
	case event.ChangePolicy:
		return CheckPolicy(l.mu.pol, p.Change, win.Commands)
	case event.ChangeTemplate:
		return CheckTemplate(l.mu.state, p)
	case event.ChangeRepository:
		return RepoValidation(p.Change), nil
	}
	return NotesValidation(), nil
}

// judgeLocked monitors an applied proposal.
func (l *Loop) judgeLocked(p *Proposal, now time.Time) []event.Draft {
	if p.Change.Kind == event.ChangeRepository {
		return nil // a person merges its pull request, or closes it: nothing to monitor
	}
	if p.RevertSeq != 0 {
		if !l.onceLocked("reverted/"+p.ID, now) {
			return nil
		}
		v, out := l.cfg.Monitor.Judge(p, l.monitoredLocked(), now)
		out.Epoch = l.tm.epoch
		if v != Revert {
			out.Reason = "reverted: " + out.Reason
		}
		return []event.Draft{event.MustDraft(event.ProposalReverted, "", out)}
	}
	v, out := l.cfg.Monitor.Judge(p, l.monitoredLocked(), now)
	out.Epoch = l.tm.epoch
	switch v {
	case Implement:
		if !l.onceLocked("implemented/"+p.ID, now) {
			return nil
		}
		return []event.Draft{event.MustDraft(event.ProposalImplemented, "", out)}
	case Revert:
		if !l.onceLocked("revert/"+p.ID, now) {
			return nil
		}
		l.log.Warn("improve: reverting a proposal", "proposal", p.ID, "reason", out.Reason)
		var undo event.Draft
		if p.Rollback.Kind == event.ChangePolicy {
			rb := p.Rollback.Policy
			if l.mu.pol == nil || l.mu.pol.Version != rb.Base {
				out.Reason += "; the policy changed since it was applied: an administrator must restore it (agentctl policy apply)"
				return []event.Draft{event.MustDraft(event.ProposalReverted, "", out)}
			}
			undo = event.MustDraft(event.PolicyRecorded, "", event.PolicyAppliedData{Base: rb.Base, Name: l.mu.pol.Name, Hash: rb.Hash,
				Text: rb.Text, Source: event.PolicyFromProposal, Proposal: p.ID, Reason: "revert of proposal " + p.ID + ": " + out.Reason})
		} else {
			if p.Rollback.Kind == event.ChangeTemplate && !templateRevertable(l.mu.state, p) {
				out.Reason += "; the family's template changed since it was applied: it is left as it is"
				return []event.Draft{event.MustDraft(event.ProposalReverted, "", out)}
			}
			undo = event.MustDraft(event.TuningChanged, "", event.TuningChangedData{Proposal: p.ID, Revert: true, Change: p.Rollback, Epoch: l.tm.epoch})
		}
		l.tm.sent["reverted/"+p.ID] = now
		return []event.Draft{undo, event.MustDraft(event.ProposalReverted, "", out)}
	}
	return nil
}

// notifyLocked queues the news of proposals whose status changed since
// the last look.
func (l *Loop) notifyLocked(now time.Time) {
	d := l.cfg.Digest
	for _, id := range l.mu.state.Order {
		p := l.mu.state.Proposals[id]
		if l.tm.notified[id] == p.Status {
			continue
		}
		l.tm.notified[id] = p.Status
		if d == nil {
			continue
		}
		last := p.History[len(p.History)-1]
		d.Add(Item{Proposal: id, Status: p.Status, Pattern: p.Pattern, Subject: p.Subject, Risk: p.Risk,
			Severity: SeverityOf(p), Summary: summaryOf(p, last), At: now, Show: "agentctl proposal show " + id})
	}
}

func summaryOf(p *Proposal, last Transition) string {
	s := fmt.Sprintf("proposal %s (%s) is %s: %s", p.ID, p.Pattern, p.Status, p.RootCause)
	if last.Note != "" {
		s += " — " + last.Note
	}
	return s
}

// Proposals returns a copy of the proposals, newest first.
func (l *Loop) Proposals() []Proposal {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Proposal
	for _, p := range l.mu.state.List() {
		out = append(out, *p)
	}
	return out
}

// Proposal returns a copy of one proposal.
func (l *Loop) Proposal(id string) (Proposal, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.mu.state.Proposals[id]
	if p == nil {
		return Proposal{}, false
	}
	return *p, true
}

// Settings returns a copy of the settings proposals change.
func (l *Loop) Settings() *State {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.mu.state.Clone()
	c.Proposals, c.Order = nil, nil
	return c
}

// PlannerNotes are State.PlannerNotes of the state in force.
func (l *Loop) PlannerNotes(family string, auto map[string]string) []Note {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.state.PlannerNotes(family, auto)
}
