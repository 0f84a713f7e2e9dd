package core

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/improve/tuning"
	"github.com/agentic-dev/agentic/roles/plugin"
	"github.com/agentic-dev/agentic/roles/policy"
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
	// Executors by node id: announced by executor.online, or by the
	// node.joined of a node that runs one. Only those neither gone nor
	// draining nor suspect take new work (schedulable).
	Executors map[string]*Executor `json:"executors"`
	// Nodes is the cluster membership as the leader recorded it
	// (node.joined, node.suspect, node.failed, node.left), by node id;
	// empty in a cluster without gossip.
	Nodes map[string]*Node `json:"nodes,omitempty"`
	// ElectedAt is the time of the newest leader.elected folded: a new
	// leader gives every executor a whole StartDeadline from then.
	ElectedAt time.Time `json:"elected_at,omitzero"`
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
	// Policy is the safety policy in force (policy.applied); nil while
	// the ledger holds none, and then Decide assigns nothing.
	Policy *PolicyInForce `json:"policy,omitempty"`
	// Planning is the planning setting in force (noplanner.go).
	Planning *Planning `json:"planning,omitempty"`
	// Plugins are the plugins in force and their pinned tool definitions
	// (plugin.added, plugin.approved, plugin.removed): tool steps are
	// judged with them (tools.go). Nil before the first plugin event.
	Plugins *plugin.State `json:"plugins,omitempty"`
	// Tuning is the self-improvement settings in force (tuning.go): the
	// step defaults a new plan's steps that set none get.
	Tuning *tuning.State `json:"tuning,omitempty"`

	// track records changes for TakeChanges; nil unless TrackChanges.
	track *tracker
	// onNode holds, per node, the steps whose current attempt it holds
	// (assigned or running), in the order they were assigned. Derived
	// from Runs: kept by setStepStatus, rebuilt by UnmarshalSnapshot.
	onNode map[string][]*Step
	// dirty lists the nodes whose slots Apply must count again (reslot)
	// once the event is folded.
	dirty []string
	// verdicts memoizes the policy's verdicts by gate subject (judge).
	verdicts map[string]policy.Verdict
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
	// Open says the current plan is planned a step at a time
	// (event.Plan.Open): its end asks for the next revision (react.go).
	Open bool `json:"open,omitempty"`
	// Invalid explains why the proposed plan cannot be scheduled (unknown or
	// forward dependency, duplicate step id); Decide fails such a run.
	Invalid string `json:"invalid,omitempty"`
	// Order is the submission order (oldest first scheduling).
	Order      uint64    `json:"order"`
	CreatedAt  time.Time `json:"created_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Wait names the first pending step (in plan order) that no
	// schedulable executor can take, and why: "step build: no live
	// executor offers docker". Views show it as the reason of a run that
	// goes on.
	Wait string `json:"wait,omitempty"`
	// Submitter signed the run's goal.submitted: an operator who may not
	// approve its gates that say NotSubmitter.
	Submitter string `json:"submitter,omitempty"`
	// Gate is the open plan gate (approve_plans): no step of the run is
	// judged or assigned until operators approve its plan revision.
	Gate *Gate `json:"gate,omitempty"`
	// Gates counts the plan gates opened (the next one's number).
	Gates int `json:"gates,omitempty"`
	// PlanApproved is the plan revision operators approved (a plan gate);
	// PlanDenied is set when they denied it, or its gate expired, and
	// PlanEnd says which (Decide fails the run with it).
	PlanApproved int  `json:"plan_approved,omitempty"`
	PlanDenied   bool `json:"plan_denied,omitempty"`
	PlanEnd      Code `json:"plan_end,omitempty"`
	// PauseReason says who paused the run and why, while it is paused.
	PauseReason string `json:"pause_reason,omitempty"`
	// Resumes counts the run.resume folded: the next assignments' key
	// (a decision a pause made the fold refuse is made again, anew).
	Resumes int `json:"resumes,omitempty"`
	// CancelRequested is set by an operator's run.cancel.
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	CancelReason    string `json:"cancel_reason,omitempty"`
	// Text is the goal's free text (empty for a plan file): what a replan
	// request gives the planner.
	Text string `json:"text,omitempty"`
	// Replans counts the replans asked for (plan.replan_requested);
	// Replanning is the revision the run waits for, nil when none.
	Replans    int         `json:"replans,omitempty"`
	Replanning *Replanning `json:"replanning,omitempty"`
	// Tokens counts the model tokens the run's plan proposals used
	// (planner_info): what a replan request tells the planner.
	Tokens int `json:"tokens,omitempty"`
	// Awaiting is what the planners said of the revision it waits for
	// (noplanner.go).
	Awaiting *PlannerWait `json:"awaiting,omitempty"`
	// Steps in plan order (a topological order).
	Steps []*Step `json:"steps,omitempty"`
	// WorktreeLost says, once the executor holding the run's git worktree
	// was lost while steps of the run remained, why the run fails
	// (CodeWorktreeLost, git.go).
	WorktreeLost string `json:"worktree_lost,omitempty"`
	// Retired are the attempts earlier revisions left out that
	// compensation still undoes (retired.go).
	Retired []*Step `json:"retired,omitempty"`

	index      map[string]int // step id → position in Steps
	deps       [][]int        // position → positions of its dependencies (-1: unknown)
	dependents [][]int        // position → positions of steps that depend on it
	caps       bool           // some step requires capabilities
	// gitAt is 1 + the position of the step gitHolder reads (the first
	// git.worktree that compensates nothing), 0 for none; gitIndexed says
	// buildIndex set it (a run never indexed is searched).
	gitAt      int
	gitIndexed bool
	// doneTo is what Decide last saw of the steps at the front of the
	// plan: Steps[:doneTo] are done (doneSteps). Done is final (a done
	// step's status has no successor; Abort is set with the failure), so
	// it holds until Steps changes, when buildIndex resets it.
	doneTo int
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
	// Replan marks a terminal logic failure with on_failure "replan": the
	// run waits for a new plan revision instead of failing (within its
	// replans budget).
	Replan bool `json:"replan,omitempty"`
	// Tail is the redacted output tail of the last failed attempt (what a
	// replan request tells the planner), and of the last attempt of a
	// step a critique targets (what the critique judges).
	Tail string `json:"tail,omitempty"`
	// CancelSent is the attempt for which a task.cancel was folded, so that
	// Decide does not ask twice.
	CancelSent int `json:"cancel_sent,omitempty"`
	// AssignedSeq is the ledger position of the current attempt's
	// task.assigned: an executor takes its assignments in that order.
	AssignedSeq uint64 `json:"assigned_seq,omitempty"`
	// SlotAt is when the current attempt, assigned and not yet reported
	// started, could first have started: when its node had a free slot
	// for it by the fold's count (its running steps and the assignments
	// before it). Zero while it waits in the executor's queue. An attempt
	// with a SlotAt may have started; one without never did.
	SlotAt time.Time `json:"slot_at,omitzero"`
	// RequestedAt is when the current attempt of a critique step was
	// asked for (critique.requested): the start of its no-planner wait.
	RequestedAt time.Time `json:"requested_at,omitzero"`
	// Lost is the latest attempt given up (a task.cancel with code
	// superseded): reports about it are superseded.
	Lost int `json:"lost,omitempty"`
	// Reassigned counts the attempts given up. They do not count against
	// the step's retries.
	Reassigned int `json:"reassigned,omitempty"`
	// Next says why the next attempt is made, for its task.assigned
	// (Reason): the attempt before it was given up, or an operator decided
	// to retry. Empty for a first attempt and a retry after a failure.
	Next string `json:"next,omitempty"`
	// Wait says why a pending step that requires capabilities cannot be
	// assigned: no schedulable executor offers them all. Empty otherwise.
	Wait string `json:"wait,omitempty"`
	// Gate is the open gate that holds the step (gated or
	// needs-decision); nil otherwise.
	Gate *Gate `json:"gate,omitempty"`
	// Gates counts the gates opened for the step: the next one's number
	// (its decision key).
	Gates int `json:"gates,omitempty"`
	// Approved is the gate subject whose approvals let the step run, and
	// Approvers the operators who gave them; the approval stands while
	// the step's subject (event.GateSubject) stays the same.
	Approved  string   `json:"approved,omitempty"`
	Approvers []string `json:"approvers,omitempty"`
	// Remember names the operator whose accept asked for the narrowest
	// allow rule of the step's command to be added to the policy (gate
	// approve --remember): the leader records it (policy.applied, source
	// remember) once the gate has its approvals, and the fold of a
	// remembered policy naming the step clears it.
	Remember string `json:"remember,omitempty"`
	// subject caches the step's gate subject (gateSubject) for the
	// policy and command it was computed for.
	subject subjectCache
	// Edits are the commands operators replaced (gate edit), oldest
	// first: the step runs its Spec's, the newest.
	Edits []Edit `json:"edits,omitempty"`
	// EndSeq is the ledger position of the task.finished that ended the
	// latest attempt: compensation undoes steps latest end first.
	EndSeq uint64 `json:"end_seq,omitempty"`
	// FileEdits are the file edits the latest attempt reported
	// (task.finished edits): what a file.restore puts back.
	FileEdits []event.FileEdit `json:"file_edits,omitempty"`
	// Compensates is set on a compensation step (not in the plan: added
	// by its first task.assigned): the attempt of the plan step it undoes.
	Compensates *event.Compensation `json:"compensates,omitempty"`
	// Critique is the verdict of a critique step's latest attempt
	// (critique.go); nil before one is recorded.
	Critique *Verdict `json:"critique,omitempty"`
	// Sources are the sources a research step's succeeded attempt
	// fetched (task.finished sources): what its synthesis reads
	// (research.go).
	Sources []event.ResearchSource `json:"sources,omitempty"`
}

// Executor is a node that runs steps.
type Executor struct {
	// Slots is how many steps it runs at once.
	Slots int `json:"slots"`
	// Queue is how many assignments it holds beyond Slots, waiting for a
	// slot: Decide gives it at most Slots+Queue (Capacity).
	Queue int `json:"queue,omitempty"`
	// Capabilities it offers; a step runs only where all of the step's
	// capabilities are offered.
	Capabilities []string `json:"capabilities,omitempty"`
	// Version is its agentd build, as announced.
	Version     string    `json:"version,omitempty"`
	Incarnation string    `json:"incarnation"`
	Since       time.Time `json:"since"`
	// Gone is NodeFailed or NodeLeft once the membership recorded that of
	// this incarnation: it takes no work, and what it held is given up.
	Gone NodeState `json:"gone,omitempty"`
	// Draining is set by node.drain: it takes no new work, and the
	// assignments it could not have started are given up.
	Draining bool `json:"draining,omitempty"`
}

// Capacity is how many steps Decide lets the executor hold: its slots and
// its queue.
func (ex *Executor) Capacity() int { return ex.Slots + max(ex.Queue, 0) }

// Offers reports whether the executor offers every capability in caps.
func (ex *Executor) Offers(caps []string) bool {
	for _, c := range caps {
		if !slices.Contains(ex.Capabilities, c) {
			return false
		}
	}
	return true
}

// NodeState is where a node is, as the leader recorded its membership.
type NodeState string

// Node states (node.joined, node.suspect, node.failed, node.left).
const (
	NodeAlive   NodeState = "alive"
	NodeSuspect NodeState = "suspect"
	NodeFailed  NodeState = "failed"
	NodeLeft    NodeState = "left"
)

// Node is one cluster member as the leader recorded it: the incarnation and
// metadata of its last membership event.
type Node struct {
	Incarnation  string    `json:"incarnation"`
	State        NodeState `json:"state"`
	Since        time.Time `json:"since"`
	Roles        []string  `json:"roles,omitempty"`
	Capabilities []string  `json:"capabilities,omitempty"`
	Slots        int       `json:"slots,omitempty"`
	Version      string    `json:"version,omitempty"`
	Addr         string    `json:"addr,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	// Changes counts the membership events applied for the node; the next
	// decision about it names it (DecisionKey.Revision), so that no two
	// are alike.
	Changes int `json:"changes"`
}

// NewState returns the empty state every fold starts from.
func NewState() *State {
	return &State{Runs: map[string]*Run{}, Executors: map[string]*Executor{},
		Nodes: map[string]*Node{}, onNode: map[string][]*Step{}}
}

// foldFunc folds one event of a known type.
type foldFunc func(s *State, ev event.Event)

// folds maps event types to their fold; types absent here are skipped.
var folds = map[event.Type]foldFunc{
	event.GoalSubmitted:       foldGoalSubmitted,
	event.RunCancel:           foldRunCancel,
	event.PlanProposed:        foldPlanProposed,
	event.PlanRejected:        both(foldPlanRejected, foldReplanNoPlanner), // noplanner.go
	event.LeaderElected:       foldLeaderElected,
	event.PlanAccepted:        foldPlanAccepted,
	event.TaskAssigned:        foldTaskAssigned,
	event.TaskCancel:          foldTaskCancel,
	event.RunFinished:         foldRunFinished,
	event.ExecutorOnline:      foldExecutorOnline,
	event.TaskStarted:         foldTaskStarted,
	event.TaskFinished:        foldTaskFinished,
	event.NodeJoined:          foldNodeJoined,
	event.NodeSuspect:         foldNodeSuspect,
	event.NodeFailed:          foldNodeFailed,
	event.NodeLeft:            foldNodeLeft,
	event.NodeDrain:           foldNodeDrain,
	event.StepDecided:         foldStepDecided,
	event.CredentialRevoked:   foldCredentialRevoked,
	event.PolicyApplied:       foldPolicyApplied,
	event.PolicyRecorded:      foldPolicyApplied,
	event.GateOpened:          foldGateOpened,
	event.GateDecided:         foldGateDecided,
	event.GateDecidedFor:      foldGateDecidedFor,
	event.GateClosed:          foldGateClosed,
	event.RunPause:            foldRunPause,
	event.RunResume:           foldRunResume,
	event.PlanReplanRequested: both(foldReplanRequested, foldReplanWait),
	event.CritiqueRequested:   foldCritiqueRequested,
	event.CritiqueRecorded:    foldCritiqueRecorded,
	event.PlanClaimed:         both(foldCritiqueClaimed, foldPlanClaimWait),
	event.ClusterSettings:     foldClusterPlanning,
	event.PluginAdded:         foldPlugin, // tools.go
	event.PluginApproved:      foldPlugin,
	event.PluginRemoved:       foldPlugin,

	// The settings approved proposals change (protocol version 8,
	// tuning.go).
	event.ProposalCreated:  foldTuning,
	event.ProposalApproved: foldTuning,
	event.ProposalRejected: foldTuning,
	// An operator's decision through the ui node, folded as their own.
	event.ProposalDecidedFor: foldTuning,
	event.ProposalApplied:    foldTuning,
	event.ProposalReverted:   foldTuning,
	event.TuningChanged:      foldTuning,

	// An operator's brakes through the ui node (protocol version 7).
	event.RunPausedFor:          foldRunPausedFor,
	event.RunResumedFor:         foldRunResumedFor,
	event.RunCancelRequestedFor: foldRunCancelRequestedFor,
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
	f := folds[ev.Type]
	if f == nil {
		return
	}
	epoch := s.Epoch
	f(s, ev)
	if s.Epoch != epoch {
		s.ElectedAt = ev.Time
	}
	for _, node := range s.dirty {
		s.reslot(node, ev.Time)
	}
	s.dirty = s.dirty[:0]
	if ev.Run != "" {
		s.evictIfFinished(s.Runs[ev.Run])
	}
}

// FreeSlots returns how many more steps node can run at once: its slots
// minus the steps assigned to or running on it across all runs (never
// below zero).
func (s *State) FreeSlots(node string) int {
	ex := s.Executors[node]
	if ex == nil {
		return 0
	}
	return max(0, ex.Slots-len(s.onNode[node]))
}

// Load returns, per node, how many steps it holds (assigned or running).
// Nodes that hold none are left out.
func (s *State) Load() map[string]int {
	n := make(map[string]int, len(s.onNode))
	for node, steps := range s.onNode {
		if len(steps) > 0 {
			n[node] = len(steps)
		}
	}
	return n
}

// busy counts assigned and running steps per node over the live runs.
func (s *State) busy() map[string]int { return s.Load() }

// schedulable reports whether the executor of node may take new work: it
// is not gone, not draining, and its incarnation is not suspect.
func (s *State) schedulable(node string, ex *Executor) bool {
	if ex == nil || ex.Gone != "" || ex.Draining {
		return false
	}
	n := s.Nodes[node]
	return n == nil || n.Incarnation != ex.Incarnation || n.State != NodeSuspect
}

// holding records that st's current attempt started or stopped holding a
// slot of its node (active: assigned or running), and marks the node for
// reslot.
func (s *State) holding(st *Step, active bool) {
	if st.Node == "" {
		return // a critique: no node holds it (critique.go)
	}
	steps := s.onNode[st.Node]
	if active {
		s.onNode[st.Node] = append(steps, st)
	} else if i := slices.Index(steps, st); i >= 0 {
		s.onNode[st.Node] = slices.Delete(steps, i, i+1)
		if len(s.onNode[st.Node]) == 0 {
			delete(s.onNode, st.Node)
		}
	}
	s.touchNode(st.Node)
}

// touchNode marks node for reslot at the end of the event's fold.
func (s *State) touchNode(node string) {
	if !slices.Contains(s.dirty, node) {
		s.dirty = append(s.dirty, node)
	}
}

// reslot gives a SlotAt of t to the assignments of node that now could
// have started: an executor starts its assignments in the order they were
// made, as slots free up, so the first Slots-running of them hold a slot.
// A gone executor frees no slot: nothing more on it could start.
func (s *State) reslot(node string, t time.Time) {
	ex := s.Executors[node]
	if ex == nil || ex.Gone != "" {
		return
	}
	free := ex.Slots
	for _, st := range s.onNode[node] {
		if st.Status == StepRunning {
			free--
		}
	}
	for _, st := range s.onNode[node] {
		if st.Status != StepAssigned {
			continue
		}
		if free <= 0 {
			return
		}
		free--
		if st.SlotAt.IsZero() {
			st.SlotAt = t
		}
	}
}

// indexNodes rebuilds onNode from the runs (after a snapshot is read):
// every active step under its node, in the order of its assignment.
func (s *State) indexNodes() {
	s.onNode = map[string][]*Step{}
	for _, r := range s.activeRuns() {
		for _, st := range r.Steps {
			if st.Active() && st.Node != "" {
				s.onNode[st.Node] = append(s.onNode[st.Node], st)
			}
		}
	}
	for _, steps := range s.onNode {
		slices.SortStableFunc(steps, func(a, b *Step) int { return cmp.Compare(a.AssignedSeq, b.AssignedSeq) })
	}
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
