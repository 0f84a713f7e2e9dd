package orchestrator

import (
	"sort"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// State is the orchestrator's projection of the ledger: the live runs (not
// yet finished), their steps and the executors that announced themselves.
// A run leaves State in the fold that gives it a final status; what a
// finished run looked like is kept elsewhere (the run index). It is changed
// only by Apply and read by Decide, View and the lookups. It is not safe for
// concurrent use; the loop that owns it serialises access.
type State struct {
	// Seq is the ledger position of the last event applied.
	Seq uint64 `json:"seq"`
	// Epoch is the newest leader epoch folded (leader.elected).
	Epoch uint64 `json:"epoch"`
	// Leader is the node that won Epoch.
	Leader string `json:"leader,omitempty"`
	// Runs holds the live runs by run id: a run is added by its
	// goal.submitted and removed by the event that finishes it.
	Runs map[string]*Run `json:"runs"`
	// Executors by node id.
	Executors map[string]*Executor `json:"executors"`
	// Fenced counts decisions ignored because their epoch was older than
	// Epoch: a deposed leader's late writes.
	Fenced uint64 `json:"fenced"`
	// Superseded counts task starts and results for an attempt older than
	// the step's current one.
	Superseded uint64 `json:"superseded"`
	// Ignored counts other events this fold recognised but could not apply:
	// duplicates, unknown runs or steps, undecodable payloads, results from
	// a node that does not hold the attempt.
	Ignored uint64 `json:"ignored"`
	// NextOrder is the submission order given to the next new run.
	NextOrder uint64 `json:"next_order"`

	// track records changes for TakeChanges; nil unless TrackChanges.
	track *tracker
}

// Run is one goal's journey from submission to a final status.
type Run struct {
	ID     string    `json:"id"`
	Goal   string    `json:"goal"`
	Status RunStatus `json:"status"`
	Reason string    `json:"reason,omitempty"`
	// Code is the stable reason of a failure or cancellation (Codes); ""
	// while the run goes on, when it succeeded, and for a run.finished
	// written before codes.
	Code     Code `json:"code,omitempty"`
	Revision int  `json:"revision"`
	// Source is where the current plan came from ("file" or "llm").
	Source string `json:"source,omitempty"`
	// Subgoals of the current plan, in declaration order.
	Subgoals []event.Subgoal `json:"subgoals,omitempty"`
	// Invalid explains why the proposed plan cannot be scheduled (unknown or
	// forward dependency, duplicate step id); Decide fails such a run.
	Invalid string `json:"invalid,omitempty"`
	// Order is the submission order (oldest first scheduling).
	Order      uint64    `json:"order"`
	CreatedAt  time.Time `json:"created_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// CancelRequested is set by an operator's run.cancel.
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	CancelReason    string `json:"cancel_reason,omitempty"`
	// Steps in plan order (a topological order).
	Steps []*Step `json:"steps,omitempty"`

	index      map[string]int // step id → position in Steps
	deps       [][]int        // position → positions of its dependencies (-1: unknown)
	dependents [][]int        // position → positions of steps that depend on it
}

// Step is the scheduling state of one plan step.
type Step struct {
	// Spec is the step as the accepted plan revision gives it.
	Spec   event.Step `json:"spec"`
	Status StepStatus `json:"status"`
	// Attempt is the number of the latest assignment (1-based; 0 = never
	// assigned). The next assignment uses Attempt+1.
	Attempt int `json:"attempt"`
	// Node holds (or last held) the attempt.
	Node string `json:"node,omitempty"`
	// ReadyAt is when the step's last dependency was satisfied, or when a
	// retry made it pending again (then equal to NotBefore).
	ReadyAt time.Time `json:"ready_at,omitzero"`
	// NotBefore delays a retry (backoff).
	NotBefore  time.Time `json:"not_before,omitzero"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	// Error is the last failure's description.
	Error string `json:"error,omitempty"`
	// Code is the last failure's (or the cancellation's) stable reason.
	Code Code `json:"code,omitempty"`
	// Class is the last failure's class.
	Class event.FailureClass `json:"class,omitempty"`
	// Abort marks a terminal failure that fails the run (on_failure is not
	// "continue").
	Abort bool `json:"abort,omitempty"`
	// CancelSent is the attempt for which a task.cancel was folded, so that
	// Decide does not ask twice.
	CancelSent int `json:"cancel_sent,omitempty"`
}

// Executor is a node that runs steps.
type Executor struct {
	Slots       int       `json:"slots"`
	Incarnation string    `json:"incarnation"`
	Since       time.Time `json:"since"`
}

// NewState returns the empty state every fold starts from.
func NewState() *State {
	return &State{Runs: map[string]*Run{}, Executors: map[string]*Executor{}}
}

// foldFunc folds one event of a known type.
type foldFunc func(s *State, ev event.Event)

// folds maps event types to their fold; types absent here are skipped.
var folds = map[event.Type]foldFunc{
	event.GoalSubmitted:  foldGoalSubmitted,
	event.RunCancel:      foldRunCancel,
	event.PlanProposed:   foldPlanProposed,
	event.PlanRejected:   foldPlanRejected,
	event.LeaderElected:  foldLeaderElected,
	event.PlanAccepted:   foldPlanAccepted,
	event.TaskAssigned:   foldTaskAssigned,
	event.TaskCancel:     foldTaskCancel,
	event.RunFinished:    foldRunFinished,
	event.ExecutorOnline: foldExecutorOnline,
	event.TaskStarted:    foldTaskStarted,
	event.TaskFinished:   foldTaskFinished,
}

// Apply folds one committed event into s. It is pure and deterministic:
// the same events in the same order give the same state on every node.
// Unknown and irrelevant types (memory.*, event.rejected, ledger.gap) are
// skipped. A run that the event gives a final status leaves s.Runs.
//
// A run id names one run: the ledger refuses a second goal.submitted for a
// run id it holds, so a goal.submitted never names a finished (forgotten)
// run.
func (s *State) Apply(ev event.Event) {
	if ev.Seq > s.Seq {
		s.Seq = ev.Seq
	}
	if f := folds[ev.Type]; f != nil {
		f(s, ev)
		if ev.Run != "" {
			s.evictIfFinished(s.Runs[ev.Run])
		}
	}
}

// FreeSlots returns how many more steps node can take: its slots minus the
// steps assigned to or running on it across all runs (never below zero).
func (s *State) FreeSlots(node string) int {
	ex := s.Executors[node]
	if ex == nil {
		return 0
	}
	return max(0, ex.Slots-s.busy()[node])
}

// busy counts assigned and running steps per node over the live runs.
func (s *State) busy() map[string]int {
	n := map[string]int{}
	for _, r := range s.Runs {
		for _, st := range r.Steps {
			if st.Active() {
				n[st.Node]++
			}
		}
	}
	return n
}

// activeRuns returns the live runs, oldest first.
func (s *State) activeRuns() []*Run {
	out := make([]*Run, 0, len(s.Runs))
	for _, r := range s.Runs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out
}

// step finds a step of a run; nil if either is unknown.
func (s *State) step(run, id string) (*Run, int, *Step) {
	r := s.Runs[run]
	if r == nil {
		return nil, -1, nil
	}
	i, ok := r.index[id]
	if !ok {
		return r, -1, nil
	}
	return r, i, r.Steps[i]
}

// fenced reports whether a decision of epoch must be ignored, counting it.
func (s *State) fenced(epoch uint64) bool {
	if (event.Decision{Epoch: epoch}).FencedBy(s.Epoch) {
		s.Fenced++
		return true
	}
	return false
}

// decode unmarshals ev's payload into v, counting an undecodable event as
// ignored.
func (s *State) decode(ev event.Event, v any) bool {
	if err := ev.Decode(v); err != nil {
		s.Ignored++
		return false
	}
	return true
}
