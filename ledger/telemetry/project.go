package telemetry

import (
	"container/list"
	"fmt"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
)

// Bounds of the projector's memory (invariant 2).
const (
	// MaxRuns is how many runs' context the projector keeps at once; the
	// least recently seen is forgotten first (its later records lose
	// their goal and commands).
	MaxRuns = 10_000
	// MaxCommand caps, in bytes, each command, goal and reason a record
	// carries (longer ones are cut and end with "…").
	MaxCommand = 4 << 10
)

// Projector folds events into records. It is not safe for concurrent use.
type Projector struct {
	runs map[string]*list.Element // of *runCtx
	lru  *list.List               // front: most recently seen
	max  int
}

// runCtx is what the projector keeps of a live run.
type runCtx struct {
	id       string
	goal     string
	family   string
	created  event.Event // goal.submitted's time
	model    string      // planner of the plan in force
	version  string
	proposed map[int]planner // revision → planner, until accepted
	steps    map[string]*stepCtx
}

type planner struct{ model, version, goal string }

// stepCtx is what the projector keeps of a step of a live run.
type stepCtx struct {
	command string
	kind    event.StepKind
	risk    string
}

// NewProjector returns a projector that has seen nothing.
func NewProjector() *Projector {
	return &Projector{runs: map[string]*list.Element{}, lru: list.New(), max: MaxRuns}
}

// Runs is how many runs' context the projector holds.
func (p *Projector) Runs() int { return p.lru.Len() }

// Project folds ev and hands emit the records it makes, in order. An
// event of a type outside SourceTypes makes none; one whose payload does
// not decode is an error naming it (the projector's state is unchanged).
// emit's error is returned as it is.
func (p *Projector) Project(ev event.Event, emit func(Record) error) error {
	f := projections[ev.Type]
	if f == nil || ev.Run == "" { // every source type is a run's
		return nil
	}
	return f(p, ev, emit)
}

type projection func(p *Projector, ev event.Event, emit func(Record) error) error

var projections = map[event.Type]projection{
	event.GoalSubmitted:  decoded(projectGoal),
	event.PlanProposed:   decoded(projectPlanProposed),
	event.PlanAccepted:   decoded(projectPlanAccepted),
	event.TaskAssigned:   decoded(projectAssigned),
	event.TaskFinished:   decoded(projectFinished),
	event.GateOpened:     decoded(projectGateOpened),
	event.GateDecided:    decoded(projectGateDecided),
	event.GateDecidedFor: decoded(projectGateDecidedFor),
	event.StepDecided:    decoded(projectStepDecided),
	event.RunFinished:    decoded(projectRunFinished),
	event.RunRated:       decoded(projectRated),
}

// decoded adapts a projection of a typed payload.
func decoded[T any](f func(p *Projector, ev event.Event, d *T, emit func(Record) error) error) projection {
	return func(p *Projector, ev event.Event, emit func(Record) error) error {
		var d T
		if err := ev.Decode(&d); err != nil {
			return fmt.Errorf("telemetry: seq %d: %w", ev.Seq, err)
		}
		return f(p, ev, &d, emit)
	}
}

// run returns the context of run id, made (and the least recently seen
// forgotten beyond max) if it has none; nil for an event of no run.
func (p *Projector) run(id string) *runCtx {
	if id == "" {
		return nil
	}
	if e, ok := p.runs[id]; ok {
		p.lru.MoveToFront(e)
		return e.Value.(*runCtx)
	}
	r := &runCtx{id: id, steps: map[string]*stepCtx{}}
	p.runs[id] = p.lru.PushFront(r)
	for p.lru.Len() > p.max {
		old := p.lru.Back()
		p.lru.Remove(old)
		delete(p.runs, old.Value.(*runCtx).id)
	}
	return r
}

// forget drops a run's context.
func (p *Projector) forget(id string) {
	if e, ok := p.runs[id]; ok {
		p.lru.Remove(e)
		delete(p.runs, id)
	}
}

// stepOrNil is the context of step id, nil if none (or no run).
func (r *runCtx) stepOrNil(id string) *stepCtx {
	if r == nil {
		return nil
	}
	return r.steps[id]
}

func (r *runCtx) step(id string) *stepCtx {
	st := r.steps[id]
	if st == nil {
		st = &stepCtx{}
		r.steps[id] = st
	}
	return st
}

// base is a record of kind k from ev with the run's context.
func (r *runCtx) base(k Kind, ev event.Event) Record {
	rec := Record{Event: k, Timestamp: ev.Time.UTC(), Seq: ev.Seq, Type: ev.Type, Run: ev.Run}
	if r != nil {
		rec.Goal, rec.Family, rec.PlannerModel, rec.PlannerVersion = r.goal, r.family, r.model, r.version
	}
	return rec
}

// withStep fills a record's step fields from the step's context.
func (r *runCtx) withStep(rec Record, step string) Record {
	rec.Step = step
	if r == nil {
		return rec
	}
	if st := r.steps[step]; st != nil {
		rec.Command, rec.Kind, rec.RiskLevel = st.command, st.kind, st.risk
	}
	return rec
}

func projectGoal(p *Projector, ev event.Event, d *event.GoalSubmittedData, _ func(Record) error) error {
	r := p.run(ev.Run)
	if r == nil {
		return nil
	}
	goal := d.Goal
	if goal == "" {
		goal = d.Text
	}
	r.goal, r.family, r.created = clean(goal), d.Family, ev
	if d.Plan != nil && d.PlanFile != "" {
		// A plan file's plan in its goal: the leader plans the run from
		// it as revision 1, and the planner proposes it later (after a
		// short run has ended). Described as the proposal would be.
		if r.family == "" {
			r.family = d.Plan.Family
		}
		if r.proposed == nil {
			r.proposed = map[int]planner{}
		}
		r.proposed[1] = planner{goal: clean(d.Plan.Goal)}
	}
	return nil
}

func projectPlanProposed(p *Projector, ev event.Event, d *event.PlanProposedData, _ func(Record) error) error {
	r := p.run(ev.Run)
	if r == nil {
		return nil
	}
	if r.family == "" {
		r.family = d.Plan.Family
	}
	if r.proposed == nil {
		r.proposed = map[int]planner{}
	}
	var pl planner
	if d.Planner != nil {
		pl = planner{model: d.Planner.Model, version: PlannerVersion(d.Planner)}
	}
	pl.goal = clean(d.Plan.Goal)
	r.proposed[d.Revision] = pl
	return nil
}

// PlannerVersion is a plan's planner_version: the planner node's build,
// the planner's code version and its prompt template hash,
// "<build>+<planner>+<template>" ("dev+llm/1+9c1d4e7a2b6f0385"); parts
// an older planner did not record are left empty.
func PlannerVersion(info *event.PlannerInfo) string {
	if info == nil {
		return ""
	}
	return info.Build + "+" + info.Planner + "+" + info.Template
}

func projectPlanAccepted(p *Projector, ev event.Event, d *event.PlanAcceptedData, _ func(Record) error) error {
	r := p.run(ev.Run)
	if r == nil {
		return nil
	}
	pl := r.proposed[d.Revision]
	r.model, r.version = pl.model, pl.version
	if pl.goal != "" {
		r.goal = pl.goal // the run's goal is its plan's, as run show says
	}
	for rev := range r.proposed {
		if rev <= d.Revision {
			delete(r.proposed, rev)
		}
	}
	return nil
}

// commandOf is what a record shows as a step's command.
func commandOf(s event.Step) string {
	switch {
	case s.Kind == event.KindTool:
		return s.Tool
	case s.Run != "":
		return s.Run
	}
	return string(s.Kind)
}

func projectAssigned(p *Projector, ev event.Event, d *event.TaskAssignedData, _ func(Record) error) error {
	r := p.run(ev.Run)
	if r == nil {
		return nil
	}
	st := r.step(d.Step.ID)
	st.command, st.kind = clean(commandOf(d.Step)), d.Step.Kind
	return nil
}

func projectFinished(p *Projector, ev event.Event, d *event.TaskFinishedData, emit func(Record) error) error {
	r := p.run(ev.Run)
	k := KindStep
	if st := r.stepOrNil(d.Step); st != nil && st.kind == event.KindTool {
		k = KindToolCall
	} else if d.Status == event.TaskFailed {
		k = KindTaskFailure
	}
	rec := r.withStep(r.base(k, ev), d.Step)
	rec.Node, rec.Attempt, rec.Status, rec.Class = d.Node, d.Attempt, string(d.Status), string(d.Class)
	rec.ExitCode, rec.CommandHash, rec.Reason = new(d.ExitCode), d.CommandHash, clean(d.Error)
	if d.TimedOut {
		rec.Code = "timed_out"
	}
	if d.Duration != 0 {
		rec.Duration = seconds(d.Duration)
	}
	return emit(rec)
}

func projectGateOpened(p *Projector, ev event.Event, d *event.GateOpenedData, emit func(Record) error) error {
	r := p.run(ev.Run)
	rec := r.base(KindEscalation, ev)
	if d.Step != "" {
		st := r.step(d.Step)
		if d.Verdict != nil {
			st.risk = d.Verdict.Level
		}
		if d.Command != "" {
			st.command = clean(d.Command)
		}
		rec = r.withStep(rec, d.Step)
	}
	rec.Attempt, rec.Action = d.Attempt, string(d.Kind)
	if d.Verdict != nil {
		rec.RiskLevel, rec.Reason = d.Verdict.Level, clean(d.Verdict.Why)
	}
	return emit(rec)
}

func projectGateDecided(p *Projector, ev event.Event, d *event.GateDecidedData, emit func(Record) error) error {
	return correction(p, ev, ev.Node, d, emit)
}

func projectGateDecidedFor(p *Projector, ev event.Event, d *event.GateDecidedForData, emit func(Record) error) error {
	return correction(p, ev, d.Operator, &d.GateDecidedData, emit)
}

// correction emits an operator's edit, skip or deny at a gate; an accept
// corrects nothing and makes no record.
func correction(p *Projector, ev event.Event, operator string, d *event.GateDecidedData, emit func(Record) error) error {
	switch d.Action {
	case event.GateEdit, event.GateSkip, event.GateDeny:
	default:
		return nil
	}
	r := p.run(ev.Run)
	rec := r.base(KindUserCorrection, ev)
	if d.Step != "" {
		rec = r.withStep(rec, d.Step)
		if d.Action == event.GateEdit && d.Command != "" {
			r.step(d.Step).command = clean(d.Command)
			rec.Command = r.steps[d.Step].command
		}
	}
	rec.Node, rec.Action, rec.Reason = operator, string(d.Action), clean(d.Reason)
	return emit(rec)
}

func projectStepDecided(p *Projector, ev event.Event, d *event.StepDecidedData, emit func(Record) error) error {
	if d.Action != event.StepSkip {
		return nil
	}
	r := p.run(ev.Run)
	rec := r.withStep(r.base(KindUserCorrection, ev), d.Step)
	rec.Node, rec.Action, rec.Reason = ev.Node, string(d.Action), clean(d.Reason)
	return emit(rec)
}

// budgetCode is the run code of a run stopped by a budget.
const budgetCode = "budget_exceeded"

func projectRunFinished(p *Projector, ev event.Event, d *event.RunFinishedData, emit func(Record) error) error {
	r := p.run(ev.Run)
	defer p.forget(ev.Run)
	rec := r.base(KindRun, ev)
	rec.Status, rec.Code, rec.Reason = string(d.Status), d.Code, clean(d.Reason)
	if r != nil && !r.created.Time.IsZero() {
		rec.Duration = seconds(event.Duration(ev.Time.Sub(r.created.Time)))
	}
	if d.Code == budgetCode {
		esc := r.base(KindEscalation, ev)
		esc.Action, esc.Code, esc.Reason = "budget", d.Code, rec.Reason
		if err := emit(esc); err != nil {
			return err
		}
	}
	return emit(rec)
}

func projectRated(p *Projector, ev event.Event, d *event.RunRatedData, emit func(Record) error) error {
	r := p.run(ev.Run)
	rec := r.base(KindFeedback, ev)
	rec.Node, rec.Rating, rec.Reason = ev.Node, string(d.Rating), clean(d.Reason)
	return emit(rec)
}

func seconds(d event.Duration) *float64 { return new(d.Std().Seconds()) }

// clean redacts s (invariant 3) and cuts it to MaxCommand bytes.
func clean(s string) string {
	if s == "" {
		return ""
	}
	s = redact.Redact(s)
	if len(s) <= MaxCommand {
		return s
	}
	cut := MaxCommand - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
