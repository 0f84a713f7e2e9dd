// Package event defines the agentic protocol: event types, the subjects they
// travel on, which node roles may emit each type, and the payload of each —
// with the types payloads are made of: the plan (Plan, Step, Subgoal),
// durations (Duration, a Go duration string on the wire), statuses
// (RunStatus, StepStatus, TaskStatus), failure classes and id grammars
// (ValidStepID, ValidRunID). docs/protocol.md shows every payload as JSON.
//
// The package owns these types: it imports no role (a test lists its
// imports), so that authoring formats, planners and schedulers change the
// protocol only by changing this package. roles/planner/plan, for one,
// keeps the plan file formats and converts them into Plan.
//
// Invariants:
//
//  1. Event types are append-only (the table of Types, pinned by
//     testdata/types.golden). A type is never renamed, renumbered, reused
//     or narrowed in its roles; a node that meets a type it does not know
//     keeps the event in its ledger and skips it in its folds, provided its
//     signer's roles may publish in the type's category (MayPublish).
//  2. Under each protocol version every type has exactly one set of roles
//     allowed to emit it (Lookup over TypesAt). Receivers refuse an event
//     whose signer's credential does not carry one of those roles.
//  3. An event's subject is derived from its type (Subject), so a JetStream
//     consumer can filter by category or type: agentic.ev.<category>.<name>,
//     with the target node appended for task assignments and cancels.
//  4. Payloads change by addition only: a field is added (absent in older
//     events, so it must have a meaning when absent), never renamed,
//     retyped or given another meaning. Durations are strings, never
//     nanosecond integers (older events' integers are still read).
package event

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Type names an event kind: "<category>.<name>".
type Type string

// Operator-issued events (agentctl, on behalf of a human).
const (
	GoalSubmitted Type = "goal.submitted"
	RunCancel     Type = "run.cancel"
	MemoryPut     Type = "memory.put"
)

// Planner events.
const (
	PlanProposed Type = "plan.proposed"
	PlanRejected Type = "plan.rejected"
	// PlanClaimed: a planner takes a run's planning (PlanClaimedData), so
	// that exactly one planner plans it; the first claim in the ledger
	// holds until its Until. Protocol version 5.
	PlanClaimed Type = "plan.claimed"
)

// Orchestrator decisions. Each carries the leader epoch (Decision).
const (
	LeaderElected Type = "leader.elected"
	PlanAccepted  Type = "plan.accepted"
	TaskAssigned  Type = "task.assigned"
	TaskCancel    Type = "task.cancel"
	RunFinished   Type = "run.finished"
	// PlanReplanRequested: a step of a running run failed with class logic
	// and on_failure replan; the leader asks the planners for the next
	// plan revision (PlanReplanRequestedData). Protocol version 5.
	PlanReplanRequested Type = "plan.replan_requested"
)

// Executor events.
const (
	ExecutorOnline Type = "executor.online"
	TaskStarted    Type = "task.started"
	TaskFinished   Type = "task.finished"
)

// Memory events.
const (
	MemoryWritten Type = "memory.written"
)

// Membership, as the leader orchestrator records it (NodeData): what
// memberlist reported about a node, made a ledger fact so that decisions
// taken on it replay. Membership grants nothing; these events only say who
// is reachable. Protocol version 2.
const (
	NodeJoined  Type = "node.joined"
	NodeSuspect Type = "node.suspect"
	NodeFailed  Type = "node.failed"
	NodeLeft    Type = "node.left"
)

// Operator requests about nodes and steps. Protocol version 2.
const (
	// NodeDrain asks a node to take no new work, finish what it runs and
	// leave (NodeDrainData).
	NodeDrain Type = "node.drain"
	// StepDecided is an operator's decision on a step held for one
	// (needs-decision): retry it or skip it (StepDecidedData).
	StepDecided Type = "step.decided"
)

// Alarms (AlarmData): a node reports a fault that stops or endangers
// progress — a full disk, a corrupted ledger, a stream deleted or changed
// behind the cluster's back, its consumer gone — once when it is found and
// once when the cause is gone (etcd's model). Any node role may raise an
// alarm about its own node. Protocol version 3.
const (
	AlarmRaised  Type = "alarm.raised"
	AlarmCleared Type = "alarm.cleared"
)

// Cluster-wide settings, recorded in the ledger (ClusterSettingsData).
const (
	ClusterSettings Type = "cluster.settings"
)

// Credential revocation (protocol version 4): an administrator revokes
// the credentials of one node or operator id issued up to a time; every
// ledger node refuses the events they sign from the revocation's stream
// position on, and keeps the earlier ones (CredentialRevokedData).
const (
	CredentialRevoked Type = "credential.revoked"
)

// Safety (protocol version 5): the policy in force is a ledger fact, and
// gates hold steps for operators (docs/policy.md).
const (
	// PolicyApplied makes a policy the one in force from its stream
	// position on (PolicyAppliedData): an administrator's `policy apply`.
	PolicyApplied Type = "policy.applied"
	// PolicyRecorded is a leader orchestrator's policy (PolicyAppliedData):
	// taken only to record the first policy while the ledger holds none
	// (source bootstrap), or the narrow allow rule of an approval given
	// with remember (source remember). A type of its own, so that every
	// fold knows who may have made it.
	PolicyRecorded Type = "policy.recorded"
	// GateOpened: the leader holds a step (or a plan revision) until
	// operators answer (GateOpenedData). A decision.
	GateOpened Type = "gate.opened"
	// GateDecided is one operator's answer to a gate: accept, edit, skip
	// or deny (GateDecidedData). The approver is the event's signer.
	GateDecided Type = "gate.decided"
	// GateClosed: the leader closes a gate no operator answered in time
	// (GateClosedData). A decision.
	GateClosed Type = "gate.closed"
	// GateDecidedFor is an operator's answer to a gate given through the
	// ui node, which authenticated the operator and signs on their behalf
	// (GateDecidedForData): the approver is Operator, the signer the ui
	// node; the event names both.
	GateDecidedFor Type = "gate.decided_for"
	// RunPause asks that a run get no new assignments (its running steps
	// finish); RunResume lifts it (RunBrakeData).
	RunPause  Type = "run.pause"
	RunResume Type = "run.resume"
)

// Run brakes given through the ui node (protocol version 7): an
// operator's run.pause, run.resume or run.cancel that the ui node, having
// authenticated the operator (an API token of their credential), signs on
// their behalf. The operator the payload names is the actor, the signer
// the ui node; folds treat each exactly as the operator's own event.
const (
	// RunPausedFor is an operator's run.pause through the ui node
	// (RunBrakeForData).
	RunPausedFor Type = "run.paused_for"
	// RunResumedFor is an operator's run.resume through the ui node
	// (RunBrakeForData).
	RunResumedFor Type = "run.resumed_for"
	// RunCancelRequestedFor is an operator's run.cancel through the ui
	// node (RunCancelForData).
	RunCancelRequestedFor Type = "run.cancel_requested_for"
)

// Roots of trust (protocol version 5): an administrator adds a root the
// cluster trusts beside the current one, and retires one, so that the
// root can be rotated with an overlap (docs/security.md).
const (
	RootAdded   Type = "trust.root_added"
	RootRetired Type = "trust.root_retired"
)

// Critique (protocol version 6): a critique step is judged by a model,
// not run by an executor. The leader asks for it (CritiqueRequestedData),
// one planner claims it (plan.claimed with Step) and records the verdict
// (CritiqueRecordedData), which the orchestrator folds as the step's
// result — so a replay reads the judgement instead of asking the model.
const (
	CritiqueRequested Type = "critique.requested"
	CritiqueRecorded  Type = "critique.recorded"
)

// RoleClusterAdmin is the role allowed to change cluster settings. For now
// operators hold it; a dedicated admin role can take its place here.
const RoleClusterAdmin = RoleOperator

// Ledger-local records. Nobody emits these on the bus: a ledger writes them
// itself, deterministically from the stream, so every ledger agrees.
const (
	// Rejected records a stream message that failed verification or policy.
	Rejected Type = "event.rejected"
	// Gap records a hole in the stream sequence the ledger folds.
	Gap Type = "ledger.gap"
	// RejectedSummary counts a run of refused stream messages the ledger
	// did not record one by one (beyond the rejection rate, see
	// ledger.RejectWindow): their stream seqs, and how many by code and by
	// claimed signer.
	RejectedSummary Type = "event.rejected_summary"
)

// Roles a node credential can carry.
const (
	RoleOrchestrator = "orchestrator"
	RolePlanner      = "planner"
	RoleExecutor     = "executor"
	RoleMemory       = "memory"
	RoleUI           = "ui"
	// RoleOperator is carried by operator credentials (agentctl).
	RoleOperator = "operator"
	// RoleAdmin is carried, with RoleOperator, by an administrator's
	// operator credential: it may revoke credentials.
	RoleAdmin = "admin"
)

// NodeRoles are the roles an agentd node can run.
var NodeRoles = []string{RoleOrchestrator, RolePlanner, RoleExecutor, RoleMemory, RoleUI}

// Spec is one row of the event-type table: a type, the roles that may emit
// it, and the protocol version that introduced it.
type Spec struct {
	// Type is the event type.
	Type Type
	// Roles may emit it; none for ledger-local types, which never travel
	// on the bus.
	Roles []string
	// Since is the protocol version (bus/envelope's rules table) from which
	// this row applies.
	Since int
}

// table is the event-type table. It is append-only (invariant 1) and
// pinned by testdata/types.golden: a row is never removed, renamed or
// edited. A new type is a new row with the protocol version that
// introduces it; widening a type's roles from version N on is a new row for
// the same type with the wider roles and Since N (Lookup takes the last row
// that applies). Roles are never narrowed.
var table = []Spec{
	{GoalSubmitted, []string{RoleOperator}, 0},
	{RunCancel, []string{RoleOperator}, 0},
	{MemoryPut, []string{RoleOperator}, 0},
	{PlanProposed, []string{RolePlanner}, 0},
	{PlanRejected, []string{RolePlanner}, 0},
	{LeaderElected, []string{RoleOrchestrator}, 0},
	{PlanAccepted, []string{RoleOrchestrator}, 0},
	{TaskAssigned, []string{RoleOrchestrator}, 0},
	{TaskCancel, []string{RoleOrchestrator}, 0},
	{RunFinished, []string{RoleOrchestrator}, 0},
	{ExecutorOnline, []string{RoleExecutor}, 0},
	{TaskStarted, []string{RoleExecutor}, 0},
	{TaskFinished, []string{RoleExecutor}, 0},
	{MemoryWritten, []string{RoleMemory}, 0},
	{ClusterSettings, []string{RoleClusterAdmin}, 0},
	{Rejected, nil, 0},
	{Gap, nil, 0},
	{NodeJoined, []string{RoleOrchestrator}, 2},
	{NodeSuspect, []string{RoleOrchestrator}, 2},
	{NodeFailed, []string{RoleOrchestrator}, 2},
	{NodeLeft, []string{RoleOrchestrator}, 2},
	{NodeDrain, []string{RoleOperator}, 2},
	{StepDecided, []string{RoleOperator}, 2},
	{AlarmRaised, []string{RoleOrchestrator, RolePlanner, RoleExecutor, RoleMemory, RoleUI}, 3},
	{AlarmCleared, []string{RoleOrchestrator, RolePlanner, RoleExecutor, RoleMemory, RoleUI}, 3},
	{RejectedSummary, nil, 3},
	{CredentialRevoked, []string{RoleAdmin}, 4},
	{PolicyApplied, []string{RoleAdmin}, 5},
	{GateOpened, []string{RoleOrchestrator}, 5},
	{GateDecided, []string{RoleOperator}, 5},
	{GateClosed, []string{RoleOrchestrator}, 5},
	{RunPause, []string{RoleOperator}, 5},
	{RunResume, []string{RoleOperator}, 5},
	{RootAdded, []string{RoleAdmin}, 5},
	{RootRetired, []string{RoleAdmin}, 5},
	{PlanClaimed, []string{RolePlanner}, 5},
	{PolicyRecorded, []string{RoleOrchestrator}, 5},
	{GateDecidedFor, []string{RoleUI}, 5},
	{PlanReplanRequested, []string{RoleOrchestrator}, 5},
	{CritiqueRequested, []string{RoleOrchestrator}, 6},
	{CritiqueRecorded, []string{RolePlanner}, 6},
	{RunPausedFor, []string{RoleUI}, 7},
	{RunResumedFor, []string{RoleUI}, 7},
	{RunCancelRequestedFor, []string{RoleUI}, 7},
	{PluginAdded, []string{RoleOperator}, 8},
	{PluginApproved, []string{RoleOperator}, 8},
	{PluginRemoved, []string{RoleOperator}, 8},
	{PROpened, []string{RoleExecutor}, 8},
	{MemoryRecorded, []string{RoleExecutor}, 8},
	{MemoryReleased, []string{RoleOperator}, 8},
	{MemoryDropped, []string{RoleOperator}, 8},
	{MemoryPruned, []string{RoleOrchestrator}, 8},
	{RunRated, []string{RoleOperator}, 8},
	{ProposalCreated, []string{RoleOrchestrator}, 8},
	{ProposalApproved, []string{RoleOperator}, 8},
	{ProposalRejected, []string{RoleOperator}, 8},
	{ProposalApplied, []string{RoleOrchestrator}, 8},
	{ProposalImplemented, []string{RoleOrchestrator}, 8},
	{ProposalReverted, []string{RoleOrchestrator}, 8},
	{TuningChanged, []string{RoleOrchestrator}, 8},
	{ImproveEval, []string{RoleOperator}, 8},
	{ArtifactStored, []string{RoleExecutor}, 8},
	{KbNoted, []string{RolePlanner}, 8},
	{ProposalDecidedFor, []string{RoleUI}, 8},
}

// Types returns the event-type table, in order, as of every protocol
// version (a copy).
func Types() []Spec {
	out := make([]Spec, len(table))
	for i, s := range table {
		out[i] = Spec{Type: s.Type, Roles: append([]string(nil), s.Roles...), Since: s.Since}
	}
	return out
}

// TypesAt returns the rows of the event-type table that apply under
// protocol version v: those with Since <= v, in order.
func TypesAt(v int) []Spec {
	rows, roles := 0, 0
	for _, s := range table {
		if s.Since <= v {
			rows, roles = rows+1, roles+len(s.Roles)
		}
	}
	// Two allocations, not one per row (bus/envelope's rules table calls
	// this for every protocol version when a process starts): the rows'
	// roles share one array, each row's slice capped at its own length so
	// that an append to it copies.
	out := make([]Spec, 0, rows)
	all := make([]string, 0, roles)
	for _, s := range table {
		if s.Since > v {
			continue
		}
		from := len(all)
		all = append(all, s.Roles...)
		r := all[from:len(all):len(all)]
		if len(s.Roles) == 0 {
			r = nil
		}
		out = append(out, Spec{Type: s.Type, Roles: r, Since: s.Since})
	}
	return out
}

// Lookup returns the row of specs that governs t: the last one for t
// (specs as returned by TypesAt, or a table of another version).
func Lookup(specs []Spec, t Type) (Spec, bool) {
	for i := len(specs) - 1; i >= 0; i-- {
		if specs[i].Type == t {
			return specs[i], true
		}
	}
	return Spec{}, false
}

// latest is the table as this build knows it, by type.
var latest = func() map[Type]Spec {
	m := make(map[Type]Spec, len(table))
	for _, s := range table {
		m[s.Type] = s
	}
	return m
}()

// AllowedRoles returns the roles allowed to emit t under the newest rules
// this build knows; nil for types that may not travel on the bus at all
// (unknown or ledger-local types).
func AllowedRoles(t Type) []string { return latest[t].Roles }

// Known reports whether t is a type this version understands.
func Known(t Type) bool {
	_, ok := latest[t]
	return ok
}

// Permit reports whether a signer holding roles may emit t under the newest
// rules this build knows.
func Permit(t Type, roles []string) bool { return permits(latest[t], roles) }

// Permits reports whether a signer holding roles may emit the type of s.
func (s Spec) Permits(roles []string) bool { return permits(s, roles) }

func permits(s Spec, roles []string) bool {
	for _, want := range s.Roles {
		for _, have := range roles {
			if have == want {
				return true
			}
		}
	}
	return false
}

// Category is the first part of a type: "task" for "task.started".
func (t Type) Category() string {
	c, _, _ := strings.Cut(string(t), ".")
	return c
}

// MayPublish reports whether a signer holding roles may publish in
// category under specs (a version's table): whether one of its roles may
// emit some type of that category. Receivers judge a type they do not know
// by this, so that events of a newer version's types are kept, not refused
// (invariant 1).
func MayPublish(specs []Spec, category string, roles []string) bool {
	for _, s := range specs {
		if s.Type.Category() == category && permits(s, roles) {
			return true
		}
	}
	return false
}

// Subject prefixes.
const (
	SubjectPrefix = "agentic.ev."
	// SubjectAll matches every event subject.
	SubjectAll = "agentic.ev.>"
)

// Subject is the subject an event of type t travels on. target is the node
// the event is addressed to; it is used only for task.assigned and
// task.cancel, which executors consume by node.
func Subject(t Type, target string) string {
	if (t == TaskAssigned || t == TaskCancel) && target != "" {
		return SubjectPrefix + string(t) + "." + target
	}
	return SubjectPrefix + string(t)
}

// NodeSubjects are the subjects an executor named node consumes.
func NodeSubjects(node string) []string {
	return []string{Subject(TaskAssigned, node), Subject(TaskCancel, node)}
}

// TypeFromSubject recovers the type from a subject: the two tokens after the
// prefix. It returns "" for subjects outside the event space.
func TypeFromSubject(subject string) Type {
	rest, ok := strings.CutPrefix(subject, SubjectPrefix)
	if !ok {
		return ""
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return Type(parts[0] + "." + parts[1])
}

// Event is one verified fact, as roles and folds see it.
type Event struct {
	// Seq is the ledger position (1-based), 0 until committed.
	Seq uint64 `json:"seq"`
	// StreamSeq is the AGENTIC_EVENTS sequence of the message that carried it.
	StreamSeq uint64 `json:"stream_seq"`
	// ID is the event id, unique across the cluster: a UUIDv7 (NewID), or
	// for an orchestrator's decision a UUIDv8 derived from its leader's
	// epoch and what it decides (orchestrator.DecisionID).
	ID string `json:"id"`
	// Type is the event kind.
	Type Type `json:"type"`
	// Run is the run the event belongs to, if any.
	Run string `json:"run,omitempty"`
	// Node is the signer: the node id (or operator id) that emitted it.
	Node string `json:"node"`
	// Time is when the signer created the event.
	Time time.Time `json:"time"`
	// Subject is the subject it travelled on.
	Subject string `json:"subject"`
	// Data is the type-specific payload (JSON).
	Data json.RawMessage `json:"data,omitempty"`
}

// Decode unmarshals the payload into v. The payloads several folds decode
// (a goal, a task's assignment, start and end) are decoded once per event
// and type and each caller gets its own copy (decodememo.go).
func (e *Event) Decode(v any) error {
	if len(e.Data) == 0 {
		return fmt.Errorf("event %s (%s): empty payload", e.ID, e.Type)
	}
	var rv reflect.Value
	if e.ID != "" {
		if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer && memoTypes[t.Elem()] {
			// Only into a zero value: json.Unmarshal merges into what a
			// value holds, which a copy would overwrite and the memo keep.
			if rv = reflect.ValueOf(v); rv.IsNil() || !rv.Elem().IsZero() {
				rv = reflect.Value{}
			} else if decodeMemo.load(e.ID, e.Data, rv) {
				return nil
			}
		}
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("event %s (%s): decode payload: %w", e.ID, e.Type, err)
	}
	if rv.IsValid() {
		decodeMemo.store(e.ID, e.Data, rv)
	}
	return nil
}

// Draft is an event before it is signed: what a role asks the outbox to emit.
type Draft struct {
	ID     string
	Type   Type
	Run    string
	Target string // addressed node, for task.assigned / task.cancel
	Time   time.Time
	Data   json.RawMessage
}

// Subject is the subject the draft will be published on.
func (d *Draft) Subject() string { return Subject(d.Type, d.Target) }

// NewDraft builds a draft with a fresh UUIDv7 id, the current time and v
// marshalled as the payload.
func NewDraft(t Type, run string, v any) (Draft, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return Draft{}, fmt.Errorf("event: marshal %s payload: %w", t, err)
	}
	return Draft{ID: NewID(), Type: t, Run: run, Time: time.Now().UTC(), Data: data}, nil
}

// MustDraft is NewDraft for payloads that cannot fail to marshal (structs of
// plain fields). It panics on error.
func MustDraft(t Type, run string, v any) Draft {
	d, err := NewDraft(t, run, v)
	if err != nil {
		panic(err)
	}
	return d
}
