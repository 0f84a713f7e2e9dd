package tuning

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// DefaultEvery is how often the leader evaluates when no improve.eval set
// an interval (the loop, roles/improve; agentctl shows it).
const DefaultEvery = time.Hour

// Status is where a proposal is in its lifecycle:
// pending → approved | rejected → applied → implemented | reverted. A
// proposal whose change validation forbids is refused at once and never
// moves.
type Status string

// Statuses.
const (
	StatusPending     Status = "pending"
	StatusApproved    Status = "approved"
	StatusRejected    Status = "rejected"
	StatusApplied     Status = "applied"
	StatusImplemented Status = "implemented"
	StatusReverted    Status = "reverted"
	StatusRefused     Status = "refused"
)

// Final reports whether no event moves a proposal of status s any more.
func (s Status) Final() bool {
	return s == StatusRejected || s == StatusImplemented || s == StatusReverted || s == StatusRefused
}

// Transition is one step of a proposal's lifecycle, as the ledger holds it.
type Transition struct {
	Status Status    `json:"status"`
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	// By is the signer (an operator for approvals and rejections).
	By string `json:"by"`
	// Note says what happened: an approval's reason, a revert's numbers.
	Note string `json:"note,omitempty"`
}

// Proposal is a proposal as the ledger made it.
type Proposal struct {
	event.ProposalCreatedData
	Status  Status    `json:"status"`
	Seq     uint64    `json:"seq"`
	Created time.Time `json:"created"`
	// Approvers are the operators who approved it, in order.
	ApprovedBy []string `json:"approved_by,omitempty"`
	// Applied is when it was applied (zero until then), AppliedSeq the
	// ledger position of its proposal.applied.
	Applied    time.Time         `json:"applied,omitzero"`
	AppliedSeq uint64            `json:"applied_seq,omitempty"`
	ApplyCheck *event.Validation `json:"apply_check,omitempty"`
	// Outcome is its proposal.implemented or proposal.reverted.
	Outcome *event.ProposalOutcomeData `json:"outcome,omitempty"`
	// ChangeSeq is the ledger position of the tuning.changed (or
	// policy.recorded) that applied its change; RevertSeq of its
	// rollback.
	ChangeSeq uint64 `json:"change_seq,omitempty"`
	RevertSeq uint64 `json:"revert_seq,omitempty"`
	// Run is the git run that applies a repository change (repo.go),
	// RunSeq its goal.submitted; PullRequest the pull request it opened
	// (its pr.opened is ChangeSeq); RunFailed how it ended when it opened
	// none.
	Run         string `json:"run,omitempty"`
	RunSeq      uint64 `json:"run_seq,omitempty"`
	PullRequest string `json:"pull_request,omitempty"`
	RunFailed   string `json:"run_failed,omitempty"`
	// History is every transition, in ledger order.
	History []Transition `json:"history"`
}

// Note is a planner note as planners see it.
type Note struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Family string `json:"family,omitempty"`
	// Source is "approved" (a proposal made it) or "automatic" (the
	// command statistics' adaptive notes, roles/memory).
	Source string `json:"source"`
	// Proposal made it (approved notes).
	Proposal string `json:"proposal,omitempty"`
}

// Note sources.
const (
	SourceApproved  = "approved"
	SourceAutomatic = "automatic"
)

// AutoPrefix starts the id of an automatic note: "auto:" + its shape.
const AutoPrefix = "auto:"

// State is the self-improvement projection of the ledger: the proposals
// and the settings they change (planner notes, step defaults, plan
// templates) and the
// evaluation's interval. It is pure: Apply folds one event, the same
// events give the same state on every node. Not safe for concurrent use.
type State struct {
	Proposals map[string]*Proposal `json:"proposals,omitempty"`
	// Order is the proposals' ids in creation order.
	Order []string `json:"order,omitempty"`
	// Notes are the approved notes, in the order they were made.
	Notes []Note `json:"notes,omitempty"`
	// Retired are the automatic notes (by id) a proposal retired or
	// pinned: planners no longer see them as automatic.
	Retired map[string]bool `json:"retired,omitempty"`
	// Defaults are the step defaults by family ("" for every family
	// without its own).
	Defaults map[string]event.StepDefaults `json:"defaults,omitempty"`
	// Templates are the plan families' templates by family (template.go).
	Templates map[string]Template `json:"templates,omitempty"`
	// Runs are the git runs of repository proposals still running: the
	// proposal by run (repo.go).
	Runs map[string]string `json:"runs,omitempty"`
	// Every is how often the leader evaluates; zero: DefaultEvery.
	Every event.Duration `json:"every,omitzero"`
	// EvalAsked is the ledger position of the newest improve.eval with
	// now: the leader evaluates when it is past the last it ran for.
	EvalAsked uint64 `json:"eval_asked,omitempty"`
	// Seq is the ledger position of the last event folded.
	Seq uint64 `json:"seq"`
	// Epoch is the newest leader epoch folded (leader.elected): the
	// leader's events of an older epoch are fenced.
	Epoch uint64 `json:"epoch,omitempty"`
	// Fenced counts the leader's events ignored because a newer leader
	// was elected before them (a deposed leader's late writes).
	Fenced int `json:"fenced,omitempty"`
}

// NewState returns the empty state.
func NewState() *State {
	return &State{Proposals: map[string]*Proposal{}, Retired: map[string]bool{}, Defaults: map[string]event.StepDefaults{}}
}

// Folds reports whether t is a type Apply folds.
func Folds(t event.Type) bool {
	switch t {
	case event.ProposalCreated, event.ProposalApproved, event.ProposalRejected, event.ProposalDecidedFor, event.ProposalApplied,
		event.ProposalImplemented, event.ProposalReverted, event.TuningChanged, event.ImproveEval,
		event.PolicyRecorded, event.LeaderElected, event.GoalSubmitted, event.PROpened, event.RunFinished:
		return true
	}
	return false
}

// Apply folds ev; it reports whether the state changed. Events of other
// types, duplicates, events the lifecycle does not allow and the leader's
// events fenced by a newer leader epoch change nothing.
func (s *State) Apply(ev event.Event) bool {
	if ev.Seq > s.Seq {
		s.Seq = ev.Seq
	}
	if s.fenced(ev) {
		return false
	}
	switch ev.Type {
	case event.LeaderElected:
		var d event.LeaderElectedData
		if ev.Decode(&d) != nil || d.Epoch <= s.Epoch {
			return false
		}
		s.Epoch = d.Epoch
		return true
	case event.ProposalCreated:
		return s.created(ev)
	case event.ProposalApproved:
		var d event.ProposalDecidedData
		return ev.Decode(&d) == nil && s.approved(ev, d, ev.Node)
	case event.ProposalRejected:
		var d event.ProposalDecidedData
		return ev.Decode(&d) == nil && s.rejected(ev, d, ev.Node)
	case event.ProposalDecidedFor:
		// The ui node's, on behalf of the operator it names: that
		// operator's approval or rejection, counted by their name.
		var d event.ProposalDecidedForData
		if ev.Decode(&d) != nil || d.Operator == "" {
			return false
		}
		switch d.Action {
		case event.ProposalApprove:
			return s.approved(ev, d.ProposalDecidedData, d.Operator)
		case event.ProposalReject:
			return s.rejected(ev, d.ProposalDecidedData, d.Operator)
		}
		return false
	case event.ProposalApplied:
		return s.applied(ev)
	case event.ProposalImplemented:
		return s.outcome(ev, StatusImplemented)
	case event.ProposalReverted:
		return s.outcome(ev, StatusReverted)
	case event.TuningChanged:
		return s.tuning(ev)
	case event.PolicyRecorded:
		return s.policyRecorded(ev)
	case event.GoalSubmitted:
		return s.repoGoal(ev)
	case event.PROpened:
		return s.repoPR(ev)
	case event.RunFinished:
		return s.repoRunEnd(ev)
	case event.ImproveEval:
		var d event.ImproveEvalData
		if ev.Decode(&d) != nil {
			return false
		}
		if d.Every > 0 {
			s.Every = d.Every
		}
		if d.Now {
			s.EvalAsked = ev.Seq
		}
		return true
	}
	return false
}

// fenced reports whether ev is a leader's event (proposal.created,
// proposal.applied, proposal.implemented, proposal.reverted,
// tuning.changed) whose epoch is older than the newest leader.elected
// folded: a deposed leader's late write, which is counted in Fenced and
// changes nothing (the rule of the orchestrator's decisions,
// event.Decision.FencedBy). An event without an epoch, from a build
// before it, is not fenced.
func (s *State) fenced(ev event.Event) bool {
	switch ev.Type {
	case event.ProposalCreated, event.ProposalApplied, event.ProposalImplemented, event.ProposalReverted, event.TuningChanged:
	default:
		return false
	}
	var d struct {
		Epoch uint64 `json:"epoch"`
	}
	if ev.Decode(&d) != nil || d.Epoch == 0 || !(event.Decision{Epoch: d.Epoch}).FencedBy(s.Epoch) {
		return false
	}
	s.Fenced++
	return true
}

func (s *State) created(ev event.Event) bool {
	var d event.ProposalCreatedData
	if ev.Decode(&d) != nil || d.ID == "" || s.Proposals[d.ID] != nil {
		return false
	}
	p := &Proposal{ProposalCreatedData: d, Status: StatusPending, Seq: ev.Seq, Created: ev.Time}
	p.History = append(p.History, Transition{Status: StatusPending, Seq: ev.Seq, At: ev.Time, By: ev.Node})
	if err := Forbidden(d.Change); err != nil {
		s.move(p, ev, StatusRefused, err.Error())
	} else if err := Forbidden(d.Rollback); err != nil {
		s.move(p, ev, StatusRefused, "rollback: "+err.Error())
	}
	s.Proposals[d.ID] = p
	s.Order = append(s.Order, d.ID)
	return true
}

func (s *State) move(p *Proposal, ev event.Event, to Status, note string) {
	s.moveBy(p, ev, to, note, ev.Node)
}

// moveBy moves p to status to, a transition by operator by.
func (s *State) moveBy(p *Proposal, ev event.Event, to Status, note, by string) {
	p.Status = to
	p.History = append(p.History, Transition{Status: to, Seq: ev.Seq, At: ev.Time, By: by, Note: note})
}

// approved folds operator by's approval d: distinct operators count once
// each, whether they signed it or a ui node did on their behalf.
func (s *State) approved(ev event.Event, d event.ProposalDecidedData, by string) bool {
	p := s.Proposals[d.Proposal]
	if p == nil || p.Status != StatusPending || slices.Contains(p.ApprovedBy, by) {
		return false
	}
	p.ApprovedBy = append(p.ApprovedBy, by)
	note := d.Reason
	if len(p.ApprovedBy) < max(1, p.Approvers) {
		p.History = append(p.History, Transition{Status: StatusPending, Seq: ev.Seq, At: ev.Time, By: by,
			Note: strings.TrimSpace(fmt.Sprintf("approval %d of %d %s", len(p.ApprovedBy), p.Approvers, note))})
		return true
	}
	s.moveBy(p, ev, StatusApproved, note, by)
	return true
}

// rejected folds operator by's rejection d of a pending proposal.
func (s *State) rejected(ev event.Event, d event.ProposalDecidedData, by string) bool {
	p := s.Proposals[d.Proposal]
	if p == nil || p.Status != StatusPending {
		return false
	}
	s.moveBy(p, ev, StatusRejected, d.Reason, by)
	return true
}

func (s *State) applied(ev event.Event) bool {
	var d event.ProposalAppliedData
	if ev.Decode(&d) != nil {
		return false
	}
	p := s.Proposals[d.Proposal]
	if p == nil || p.Status != StatusApproved {
		return false
	}
	p.Applied, p.AppliedSeq, p.ApplyCheck = ev.Time, ev.Seq, &d.Validation
	s.move(p, ev, StatusApplied, d.Validation.Summary)
	return true
}

func (s *State) outcome(ev event.Event, to Status) bool {
	var d event.ProposalOutcomeData
	if ev.Decode(&d) != nil {
		return false
	}
	p := s.Proposals[d.Proposal]
	if p == nil || (p.Status != StatusApplied && !(to == StatusReverted && p.Status == StatusApproved)) {
		return false
	}
	p.Outcome = &d
	s.move(p, ev, to, d.Reason)
	return true
}

// policyRecorded notes the policy version a proposal applied (or its
// revert): the policy folds (roles/policy.Applied) take the policy itself.
func (s *State) policyRecorded(ev event.Event) bool {
	var d event.PolicyAppliedData
	if ev.Decode(&d) != nil || d.Source != event.PolicyFromProposal {
		return false
	}
	p := s.Proposals[d.Proposal]
	if p == nil {
		return false
	}
	switch {
	case p.ChangeSeq == 0 && (p.Status == StatusApproved || p.Status == StatusApplied):
		p.ChangeSeq = ev.Seq
	case p.ChangeSeq != 0 && p.RevertSeq == 0 && (p.Status == StatusApplied || p.Status == StatusReverted):
		p.RevertSeq = ev.Seq
	default:
		return false
	}
	return true
}

// tuning applies a tuning.changed: the change of an approved proposal, or
// the rollback of an applied (or approved, not yet applied) one. Anything
// else — no proposal, another status, a change that is not the
// proposal's, a forbidden change — changes nothing.
func (s *State) tuning(ev event.Event) bool {
	var d event.TuningChangedData
	if ev.Decode(&d) != nil {
		return false
	}
	p := s.Proposals[d.Proposal]
	if p == nil || Forbidden(d.Change) != nil {
		return false
	}
	if d.Revert {
		// The rollback travels just before its proposal.reverted; a
		// fold that meets them the other way round still takes it once.
		if (p.Status != StatusApplied && p.Status != StatusReverted) || p.ChangeSeq == 0 || p.RevertSeq != 0 || !sameChange(d.Change, p.Rollback) {
			return false
		}
		p.RevertSeq = ev.Seq
	} else {
		// The change travels just before its proposal.applied; a fold
		// that meets them the other way round still takes it once.
		if (p.Status != StatusApproved && p.Status != StatusApplied) || p.ChangeSeq != 0 || !sameChange(d.Change, p.Change) {
			return false
		}
		p.ChangeSeq = ev.Seq
	}
	s.change(d.Change, d.Proposal, ev.Seq)
	return true
}

// sameChange compares two changes by their JSON.
func sameChange(a, b event.Change) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// change applies c (validated), the tuning.changed at seq, to the
// settings.
func (s *State) change(c event.Change, proposal string, seq uint64) {
	switch c.Kind {
	case event.ChangeTemplate:
		s.template(*c.Template, proposal, seq)
	case event.ChangeNotes:
		s.note(*c.Note, proposal)
	case event.ChangeStepDefaults:
		d := s.Defaults[c.Defaults.Family]
		d.Family = c.Defaults.Family
		switch c.Setting {
		case event.SettingDefaultsTimeout:
			d.Timeout = c.Defaults.Timeout
		case event.SettingDefaultsRetries:
			d.Retries = c.Defaults.Retries
		}
		if d.Timeout == 0 && d.Retries == nil {
			delete(s.Defaults, d.Family)
		} else {
			s.Defaults[d.Family] = d
		}
	}
}

func (s *State) note(n event.NoteChange, proposal string) {
	at := slices.IndexFunc(s.Notes, func(x Note) bool { return x.ID == n.ID })
	auto := strings.HasPrefix(n.ID, AutoPrefix)
	switch n.Op {
	case event.NoteAdd, event.NoteEdit, event.NotePin:
		note := Note{ID: n.ID, Text: n.Text, Family: n.Family, Source: SourceApproved, Proposal: proposal}
		if at >= 0 {
			s.Notes[at] = note
		} else {
			s.Notes = append(s.Notes, note)
		}
		if auto {
			s.Retired[n.ID] = true
		}
	case event.NoteRetire:
		if at >= 0 {
			s.Notes = slices.Delete(s.Notes, at, at+1)
		}
		if auto {
			s.Retired[n.ID] = true
		}
	case event.NoteRestore:
		if at >= 0 {
			s.Notes = slices.Delete(s.Notes, at, at+1)
		}
		delete(s.Retired, n.ID)
	}
}

// StepDefaults fills the timeout and retries of step, when it sets none,
// from the defaults of family (or, when family has none, those of every
// family). It reports whether it changed step.
func (s *State) StepDefaults(family string, step *event.Step) bool {
	if s == nil {
		return false
	}
	d, ok := s.Defaults[family]
	if !ok {
		d, ok = s.Defaults[""]
	}
	if !ok {
		return false
	}
	changed := false
	if step.Timeout == 0 && d.Timeout > 0 {
		step.Timeout, changed = d.Timeout, true
	}
	if step.Retries == 0 && d.Retries != nil && *d.Retries > 0 {
		step.Retries, changed = *d.Retries, true
	}
	return changed
}

// PlannerNotes are the notes a planner's prompt carries for a plan of
// family: the approved notes (those of family and those of no family)
// first, then the automatic ones (auto, the command statistics' notes by
// shape) not retired, marked as automatic.
func (s *State) PlannerNotes(family string, auto map[string]string) []Note {
	var out []Note
	for _, n := range s.Notes {
		if n.Family == "" || n.Family == family {
			out = append(out, n)
		}
	}
	for _, shape := range slices.Sorted(maps.Keys(auto)) {
		id := AutoPrefix + shape
		if s.Retired[id] {
			continue
		}
		out = append(out, Note{ID: id, Text: auto[shape], Source: SourceAutomatic})
	}
	return out
}

// List returns the proposals, newest first.
func (s *State) List() []*Proposal {
	out := make([]*Proposal, 0, len(s.Order))
	for i := len(s.Order) - 1; i >= 0; i-- {
		out = append(out, s.Proposals[s.Order[i]])
	}
	return out
}

// Clone returns a deep copy (through JSON: the state is plain data).
func (s *State) Clone() *State {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	c := NewState()
	if err := json.Unmarshal(b, c); err != nil {
		panic(err)
	}
	if c.Retired == nil {
		c.Retired = map[string]bool{}
	}
	if c.Defaults == nil {
		c.Defaults = map[string]event.StepDefaults{}
	}
	return c
}
