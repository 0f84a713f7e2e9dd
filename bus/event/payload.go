package event

import (
	"encoding/json"
	"strings"
	"time"
)

// GoalSubmittedData starts a run. Exactly one of PlanFile or Text is the
// source the planner works from.
type GoalSubmittedData struct {
	// Goal is the human description (the plan's goal, or the free text).
	Goal string `json:"goal"`
	// PlanFile is the plan file's content, when the goal came with one.
	PlanFile string `json:"plan_file,omitempty"`
	// PlanName is the file name it came from, for error messages.
	PlanName string `json:"plan_name,omitempty"`
	// Plan is PlanFile as the submitter read it: parsed, its goal
	// defaulted to Goal, in normal form (what a planner would propose as
	// revision 1). Optional, protocol version 8: with it the leader plans
	// the run from the goal itself, without waiting for a planner's
	// proposal, if the plan is in normal form (normalizing it changes
	// nothing); otherwise it is ignored and a planner plans the file, as
	// for a goal without it. It never replaces PlanFile, which every
	// planner still reads.
	Plan *Plan `json:"plan,omitempty"`
	// Text is a free-text goal for an LLM planner.
	Text string `json:"text,omitempty"`
	// Family is the plan family of a free-text goal (Plan.Family): the
	// model's plans inherit it. Protocol version 8.
	Family string `json:"family,omitempty"`
	// TraceParent is the submitter's W3C trace context (a CI job's
	// traceparent header, ParseTraceParent's form): the run's trace
	// becomes part of that trace, its root span a child of that span.
	// Inside the signed event, it survives the ledger. Protocol version
	// 8; absent: the run's trace is its own.
	TraceParent string `json:"traceparent,omitempty"`
	// Proposal names the approved repository proposal whose change this
	// goal's plan applies (agentctl proposal apply): every fold links the
	// run to it when the plan file is exactly the proposal's
	// (roles/improve/tuning.RepoPlan). Protocol version 8.
	Proposal string `json:"proposal,omitempty"`
}

// RunCancelData asks the orchestrator to cancel a run.
type RunCancelData struct {
	Reason string `json:"reason,omitempty"`
}

// MemoryPutData asks the memory role to store a fact; the memory role answers
// with MemoryWritten, the fact memory folds.
type MemoryPutData struct {
	// Scope is "shared" or a run id.
	Scope string `json:"scope"`
	Key   string `json:"key"`
	Value string `json:"value"`
	// TTL is how long the fact lives; zero (absent) means forever.
	TTL Duration `json:"ttl,omitzero"`
	// Tags label the fact (ValidTags). Protocol version 8.
	Tags []string `json:"tags,omitempty"`
}

// MemoryWrittenData is a fact as stored.
type MemoryWrittenData struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	Value string `json:"value"`
	// Expires is the absolute expiry; zero means never.
	Expires time.Time `json:"expires,omitzero"`
	// Request is the id of the memory.put event this answers.
	Request string `json:"request,omitempty"`
}

// PlanProposedData is a plan revision for a run.
type PlanProposedData struct {
	// Revision numbers the run's plans, from 1.
	Revision int `json:"revision"`
	// Source is where the plan came from: "file", "llm" or (protocol
	// version 8) "template": the template of the goal's family.
	Source string `json:"source"`
	// Plan is the normalized plan.
	Plan Plan `json:"plan"`
	// Planner is the provenance of a model's plan (Source "llm").
	// Protocol version 5.
	Planner *PlannerInfo `json:"planner_info,omitempty"`
	// Rationale says why a revision after the first changes the plan (the
	// model's words). Protocol version 5.
	Rationale string `json:"rationale,omitempty"`
	// Replaces is the revision a replanned revision replaces (Revision-1),
	// and Failure the failure that asked for it. Protocol version 5.
	Replaces int          `json:"replaces,omitempty"`
	Failure  *StepFailure `json:"failure,omitempty"`
}

// StepFailure is the failure of a step that asked for a replan: what the
// planner is told.
type StepFailure struct {
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Command is the step's shell command (or, for a file edit, its
	// kind and path).
	Command  string       `json:"command,omitempty"`
	ExitCode int          `json:"exit_code"`
	Class    FailureClass `json:"class,omitempty"`
	// Error is the failure's description.
	Error string `json:"error,omitempty"`
	// Output is the tail of the step's output, redacted by its executor.
	Output string `json:"output,omitempty"`
}

// PlanReplanRequestedData asks the planners for revision Revision+1 of a
// running run whose step failed (Failure) with on_failure replan. It
// carries what a planner needs without having folded the run: the goal,
// the plan in force, and the steps already done, which the next revision
// keeps (by id, with the same spec) and does not run again.
type PlanReplanRequestedData struct {
	Decision
	// Revision is the plan revision in force, the one to replace.
	Revision int `json:"revision"`
	// Replans counts the replans asked for this run, this one included.
	Replans int `json:"replans"`
	// Tokens is what the run's planning used so far (the model's prompt
	// and answer tokens of its plan.proposed and plan.rejected): a
	// planner counts them against the run's token budget.
	Tokens int `json:"tokens,omitempty"`
	// Goal is the run's goal as submitted.
	Goal GoalSubmittedData `json:"goal"`
	// Source is where the plan in force came from ("file", "llm",
	// "template").
	Source string `json:"source"`
	// Plan is the plan in force.
	Plan Plan `json:"plan"`
	// Done lists the ids of the steps that succeeded or were skipped.
	Done []string `json:"done,omitempty"`
	// Failure is the failed step (Reason ReplanFailure).
	Failure StepFailure `json:"failure"`
	// Reason is why a revision is asked for: ReplanFailure (absent) or
	// ReplanNext. Protocol version 6.
	Reason string `json:"reason,omitempty"`
	// Results are what the final steps of the plan in force ended with,
	// in plan order: the observations a step-at-a-time planner plans the
	// next step from. Protocol version 6.
	Results []StepResult `json:"results,omitempty"`
}

// Reasons for a replan request (PlanReplanRequestedData.Reason).
const (
	// ReplanFailure: a step failed with on_failure replan.
	ReplanFailure = "failure"
	// ReplanNext: every step of an open plan (Plan.Open) is final; the
	// planner plans what comes next, or closes the plan.
	ReplanNext = "next"
)

// StepResult is how one step of a run ended, as the leader folded it.
// Protocol version 6.
type StepResult struct {
	Step     string     `json:"step"`
	Status   StepStatus `json:"status"`
	ExitCode int        `json:"exit_code,omitempty"`
	// Reason is the error or skip reason, if any.
	Reason string `json:"reason,omitempty"`
	// OutputTail is the redacted end of the last attempt's output.
	OutputTail string `json:"output_tail,omitempty"`
}

// PlanClaimedData: the signing planner plans the event's run. The first
// claim in the ledger holds; a later one counts only once the holding
// claim's Until has passed (by the later claim's time), so a planner that
// died while planning does not hold the run for ever.
type PlanClaimedData struct {
	// Until is when the claim lapses if no plan came.
	Until time.Time `json:"until"`
	// Source is how the planner will plan it: "file" or "llm".
	Source string `json:"source"`
	// Revision is the plan revision the claim is for: a replan is claimed
	// anew. 0 (absent) means 1. Protocol version 5.
	Revision int `json:"revision,omitempty"`
	// Step and Attempt, when set, make it a claim of a critique
	// (critique.requested for that attempt of that step), not of a plan
	// revision. Protocol version 6.
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// NoPlanner is PlanRejectedData.Code when no planner that can plan the
// goal claimed it within the claim timeout.
const NoPlanner = "no_planner"

// PlanRejectedData says the planner could not produce a plan.
type PlanRejectedData struct {
	Error string `json:"error"`
	// Code is the stable reason, when there is one: "no_planner" when no
	// planner that can plan the goal claimed it in time. Protocol
	// version 5.
	Code string `json:"code,omitempty"`
	// Planner is the provenance of a model's failed planning: what it
	// answered and what that cost. Protocol version 5.
	Planner *PlannerInfo `json:"planner_info,omitempty"`
}

// Decision is embedded in every orchestrator decision: the leader epoch that
// made it. Folds ignore decisions older than the newest LeaderElected.
type Decision struct {
	Epoch uint64 `json:"epoch"`
	// Basis is the ledger position of the state the leader decided on
	// (the last event its fold had applied): a replay folds to Basis and
	// decides again to check the decision (roles/orchestrator/replay).
	// Absent before protocol version 5.
	Basis uint64 `json:"basis,omitempty"`
}

// FencedBy is the fencing rule, the one place it is written: a decision is
// void when the leader epoch in force where it is read (the newest
// leader.elected before it, in the ledger or on the stream) is newer than
// the epoch that made it. A deposed leader's late decisions are recorded
// and have no effect — in the orchestrator's fold and on executors alike.
func (d Decision) FencedBy(inForce uint64) bool { return d.Epoch < inForce }

// LeaderElectedData announces a new orchestrator leader.
type LeaderElectedData struct {
	Decision
	Leader string `json:"leader"`
}

// PlanAcceptedData moves a run to running with the given plan revision.
type PlanAcceptedData struct {
	Decision
	Revision int `json:"revision"`
}

// TaskAssignedData gives one attempt of a step to an executor node.
type TaskAssignedData struct {
	Decision
	Step    Step   `json:"step"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node"`
	// ReadyAt is when the step became ready (for dispatch latency).
	ReadyAt time.Time `json:"ready_at"`
	// Reason says why an attempt other than the first was made, for
	// people: "node node-b failed", "not started within 30s". Absent for a
	// first attempt and a retry after a failure. Protocol version 2.
	Reason string `json:"reason,omitempty"`
	// Policy is the policy version the leader judged the step with: the
	// executor judges the step again with exactly that version before
	// running it, and refuses it (class policy) when it cannot. Absent
	// before protocol version 5.
	Policy PolicyRef `json:"policy,omitzero"`
	// Approved is the Subject of the gate whose approvals let the step
	// run (GateSubject of the step as assigned); "" when the policy
	// allowed it without one. The executor runs a step its own verdict
	// gates only when Approved is the subject it computes. Protocol
	// version 5.
	Approved string `json:"approved,omitempty"`
	// Approvers are the operators whose approvals counted, in order.
	Approvers []string `json:"approvers,omitempty"`
	// Compensates, when set, makes this assignment the compensation of an
	// earlier completed attempt of the run (Step names the compensation
	// step itself): a file.restore of its edits, or its shell step's
	// Compensate command. Protocol version 5.
	Compensates *Compensation `json:"compensates,omitempty"`
	// Memory are the step's ${memory:SCOPE/KEY} references as the leader
	// resolved them: Step carries the resolved command (ApplyMemory), and
	// folds judge it with these values. Protocol version 8.
	Memory []MemoryValue `json:"memory,omitempty"`
	// ToolHash, for a step of kind tool, is the hash of the pinned
	// definition the leader judged it with: the executor calls the tool
	// only while its pinned definition has that hash, and an approval
	// (Approved) binds it (ToolGateSubject). Protocol version 8.
	ToolHash string `json:"tool_hash,omitempty"`
	// Inputs are the step's Step.Inputs as the leader resolved them, to
	// a hash each: the executor writes exactly these bytes, verified,
	// into the working directory before the step runs. Protocol version
	// 8.
	Inputs []ResolvedInput `json:"inputs,omitempty"`
	// ArtifactBytes is what the run's artifacts already stored hold, in
	// bytes, as the leader folded them at assignment: the executor stores
	// the step's outputs within the policy's run cap less this. Protocol
	// version 8.
	ArtifactBytes int64 `json:"artifact_bytes,omitempty"`
}

// TaskCancelData tells an executor to stop a step attempt.
type TaskCancelData struct {
	Decision
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node"`
	Reason  string `json:"reason,omitempty"`
	// Code is the stable reason: "superseded" when the attempt was given
	// to another node (its node failed or it never started), the run's or
	// step's end code otherwise. Absent before protocol version 2.
	Code string `json:"code,omitempty"`
}

// RunFinishedData closes a run.
type RunFinishedData struct {
	Decision
	// Status is final: succeeded, failed or cancelled.
	Status RunStatus `json:"status"`
	Reason string    `json:"reason,omitempty"`
	// Code is the stable reason of a failure or cancellation (the
	// orchestrator's codes, e.g. step_failed); Reason is for people. Absent
	// from events written before codes.
	Code string `json:"code,omitempty"`
}

// ExecutorOnlineData announces an executor and its capacity.
type ExecutorOnlineData struct {
	Slots int `json:"slots"`
	// Incarnation changes every time the executor process starts.
	Incarnation string `json:"incarnation"`
	// Queue is how many assignments the executor accepts beyond Slots and
	// holds until a slot frees, so that a slot never waits for the
	// orchestration round trip; absent (0) in events before protocol
	// version 2.
	Queue int `json:"queue,omitempty"`
	// Capabilities the executor offers (docker, gpu, …): a step that
	// requires some runs only where all of them are offered.
	Capabilities []string `json:"capabilities,omitempty"`
	// Version is the agentd build.
	Version string `json:"version,omitempty"`
	// Tools are the plugin tools the executor's plugin servers reported,
	// with their definition hashes (protocol version 8); Plugins says
	// how each plugin's server fares. An executor emits executor.online
	// again, with the same Incarnation, when they change.
	Tools   []ToolReport   `json:"tools,omitempty"`
	Plugins []PluginReport `json:"plugins,omitempty"`
}

// NodeData is a membership change the leader recorded (node.joined,
// node.suspect, node.failed, node.left). It describes the node as its
// gossip metadata announced it.
type NodeData struct {
	Decision
	// Node is the node id (its credential subject).
	Node string `json:"node"`
	// Incarnation identifies the agentd process: a node that restarts
	// joins with a new one.
	Incarnation string `json:"incarnation"`
	// Roles the node runs.
	Roles []string `json:"roles,omitempty"`
	// Capabilities and Slots the node's executor offers, if it runs one.
	Capabilities []string `json:"capabilities,omitempty"`
	Slots        int      `json:"slots,omitempty"`
	// Version is the node's agentd build.
	Version string `json:"version,omitempty"`
	// Addr is the gossip address it was seen at.
	Addr string `json:"addr,omitempty"`
	// Reason says what was observed, for people.
	Reason string `json:"reason,omitempty"`
}

// NodeDrainData asks a node to take no new work, finish what it runs and
// leave the cluster.
type NodeDrainData struct {
	Node   string `json:"node"`
	Reason string `json:"reason,omitempty"`
}

// StepAction is what an operator decided for a step held in
// needs-decision.
type StepAction string

// Step actions.
const (
	// StepRetry runs the step again, as a new attempt.
	StepRetry StepAction = "retry"
	// StepSkip ends the step as skipped: its dependents run.
	StepSkip StepAction = "skip"
)

// StepDecidedData is an operator's decision on a step of the event's run.
type StepDecidedData struct {
	Step   string     `json:"step"`
	Action StepAction `json:"action"`
	Reason string     `json:"reason,omitempty"`
}

// TaskStartedData says an executor began an attempt.
type TaskStartedData struct {
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node"`
	PID     int    `json:"pid,omitempty"`
}

// TaskFinishedData is the result of an attempt.
type TaskFinishedData struct {
	Step    string     `json:"step"`
	Attempt int        `json:"attempt"`
	Node    string     `json:"node"`
	Status  TaskStatus `json:"status"`
	// Class says why a failed attempt failed; empty otherwise.
	Class    FailureClass `json:"class,omitempty"`
	ExitCode int          `json:"exit_code"`
	// Error says what went wrong, for people; programs read Status, Class,
	// TimedOut and Interrupted.
	Error    string `json:"error,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Interrupted marks an attempt the executor could not finish and that
	// may have partly run: its process was killed by a shutdown, or the
	// executor restarted during it (Status failed, Class transient). The
	// orchestrator re-runs such a step only if it is idempotent.
	//
	// It is always written, false included, so that its absence tells an
	// event from a build before the field (protocol version 0), whose
	// executors said it with an Error starting with LegacyInterruptedPrefix:
	// UnmarshalJSON sets Interrupted for those (see there).
	Interrupted bool      `json:"interrupted"`
	Started     time.Time `json:"started"`
	// Duration is how long the attempt took, guards included.
	Duration Duration `json:"duration,omitzero"`
	Cwd      string   `json:"cwd,omitempty"`
	User     string   `json:"user,omitempty"`
	// OutputTail is the redacted end of combined stdout/stderr.
	OutputTail string `json:"output_tail,omitempty"`
	// CommandHash identifies the command for statistics (sha256 hex, 16 chars).
	CommandHash string `json:"command_hash,omitempty"`
	// Edits are the before- and after-images, by content hash, of the
	// files a file.write or file.patch step changed, in the order they
	// were written (what a compensation restores, in reverse), and the
	// files a file.restore put back. Protocol version 5.
	Edits []FileEdit `json:"edits,omitempty"`
	// Sources are the sources a research step fetched, by content hash
	// (what its synthesis reads). Protocol version 8.
	Sources []ResearchSource `json:"sources,omitempty"`
}

// LegacyInterruptedPrefix starts the Error of an interrupted attempt in
// task.finished events written before TaskFinishedData.Interrupted existed.
// Executors still start the Error of an interrupted attempt with it, for
// people.
const LegacyInterruptedPrefix = "interrupted"

// UnmarshalJSON decodes a task.finished payload. An event without the
// interrupted field comes from a build before the field (which wrote
// protocol version 0): it counts as interrupted when its Error starts with
// LegacyInterruptedPrefix, the way such builds said it. The ledger record
// of an event does not keep the message's protocol version, so the field's
// presence is the test; every build that writes the field writes it on
// every task.finished.
func (d *TaskFinishedData) UnmarshalJSON(b []byte) error {
	type plain TaskFinishedData // without this method
	v := struct {
		*plain
		// Interrupted shadows plain's field (the shallower one wins), so a
		// missing field stays nil.
		Interrupted *bool `json:"interrupted"`
	}{plain: (*plain)(d)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Interrupted != nil {
		d.Interrupted = *v.Interrupted
	} else {
		d.Interrupted = strings.HasPrefix(d.Error, LegacyInterruptedPrefix)
	}
	return nil
}

// RejectedData describes a refused stream message (or one refused event of
// a message).
type RejectedData struct {
	// Code is the stable reason (RejectCodes). Records written before codes
	// existed have none: their Reason is free text.
	Code RejectCode `json:"code,omitempty"`
	// Reason says it for people. It is derived only from the code, the
	// message's bytes, its stream time and the rules of its protocol
	// version — never from a library's error text — so that every ledger
	// writes the same record for the same message.
	Reason string `json:"reason"`
	// Subject the message came on.
	Subject string `json:"subject"`
	// Signer is the node the message claims (kid/iss), possibly forged.
	Signer string `json:"signer,omitempty"`
	// ClaimedType is the type the message claims, if it could be read.
	ClaimedType string `json:"claimed_type,omitempty"`
	// ClaimedID is the event id the message claims, if it could be read.
	ClaimedID string `json:"claimed_id,omitempty"`
}

// RejectedSummaryData counts the refused stream messages From..To, every
// one of them refused and none recorded on its own: the ledger records
// rejections one by one up to a rate, then samples and counts them
// (ledger.RejectWindow). Count is To-From+1.
type RejectedSummaryData struct {
	From  uint64 `json:"from"`  // first stream seq counted
	To    uint64 `json:"to"`    // last stream seq counted
	Count uint64 `json:"count"` // messages counted
	// ByCode counts them by rejection code.
	ByCode map[RejectCode]uint64 `json:"by_code"`
	// BySigner counts them by claimed signer ("unknown" when none could be
	// read; "other" past the signers one window tracks).
	BySigner map[string]uint64 `json:"by_signer"`
}

// GapData records a hole in the stream sequence.
type GapData struct {
	From uint64 `json:"from"` // first missing stream seq
	To   uint64 `json:"to"`   // last missing stream seq
}

// ClusterSettingsData is the full set of cluster-wide settings, in force
// from the event that carries it until the next one. Every cluster.settings
// event carries all settings, never a change alone, so the latest one is
// enough to know them; Revision numbers them (the previous revision + 1;
// an event whose revision is not above the one in force changes nothing).
// Settings added later (the leader lease TTL) join as new fields, absent
// in older events.
type ClusterSettingsData struct {
	Revision uint64             `json:"revision"`
	Streams  ClusterStreamsData `json:"streams"`
	// Lease is the orchestrators' leader lease; absent in settings written
	// before protocol version 2 (the default applies).
	Lease LeaseSettingsData `json:"lease,omitzero"`
	// Planning is what planners and orchestrators time the planning of a
	// goal by; absent in settings written before protocol version 6 (the
	// defaults apply).
	Planning PlanningSettingsData `json:"planning,omitzero"`
}

// PlanningSettingsData is the planning settings every planner and every
// orchestrator agree on.
type PlanningSettingsData struct {
	// ClaimTimeout is how long a goal (or a replan request) may wait for
	// a planner that can plan it to claim it: then a planner that cannot
	// rejects it with code no_planner, and the leader orchestrator fails
	// the run with that code a margin later if no planner said anything
	// (no planner node at all). Zero means the default
	// (DefaultClaimTimeout).
	ClaimTimeout Duration `json:"claim_timeout,omitzero"`
}

// DefaultClaimTimeout is the claim timeout while the cluster settings
// record none.
const DefaultClaimTimeout = 30 * time.Second

// LeaseSettingsData is the leader lease every orchestrator times itself
// by and the leader bucket expires entries by.
type LeaseSettingsData struct {
	// TTL is how long a lease lives without renewal; the leader renews it
	// every TTL/3, and a standby takes over within TTL of the leader's
	// death. Zero means the default (DefaultLeaseTTL).
	TTL Duration `json:"ttl,omitzero"`
}

// DefaultLeaseTTL is the leader lease TTL while the cluster settings
// record none. A killed leader's lease is taken over at most a TTL plus a
// standby's poll (TTL/10) later, 1.65 s, which keeps leader failover
// under 2 s without gossip; the leader renews every 500 ms, so it rides
// out a second of stalls (two failed renewals) before it loses the lease.
const DefaultLeaseTTL = 1500 * time.Millisecond

// ClusterStreamsData holds the settings of the protocol's streams.
type ClusterStreamsData struct {
	// Events is AGENTIC_EVENTS: a transport buffer, the archive being the
	// ledger nodes' own stores.
	Events StreamSettingsData `json:"events"`
	// Logs is AGENTIC_LOGS: step output.
	Logs StreamSettingsData `json:"logs"`
	// Repair is the rule for a stream (or the leader bucket) found
	// deleted or drifted from these settings: StreamsRepairAlarm raises
	// an alarm and leaves the stream for an operator, StreamsRepairRestore
	// has the ledger node that notices recreate a deleted stream (a changed
	// one is put back by an administrator, who alone may update streams).
	// Absent in settings written before protocol version 3, and in any
	// that keep the default: StreamsRepairAlarm.
	Repair string `json:"repair,omitempty"`
}

// The values of ClusterStreamsData.Repair.
const (
	// StreamsRepairAlarm: a deleted or drifted stream raises an alarm
	// (STREAM_MISSING, STREAM_DRIFT) that stays until an operator puts the
	// stream back or records its values as the settings. The default.
	StreamsRepairAlarm = "alarm"
	// StreamsRepairRestore: the ledger node that notices a deleted stream
	// recreates it (continuing its sequence), logs that it did, and clears
	// the alarm; a drifted one stays an alarm until an administrator
	// applies the settings again (nodes may create streams, never update
	// them).
	StreamsRepairRestore = "restore"
)

// StreamSettingsData is one stream's limits and replicas. A stream drops
// its oldest messages when it passes either limit.
type StreamSettingsData struct {
	// MaxAge is a Go duration ("720h"); "0s" means no age limit.
	MaxAge string `json:"max_age"`
	// MaxBytes is the byte limit; 0 means none.
	MaxBytes int64 `json:"max_bytes"`
	// Replicas is the stream's replica count (1 to 5).
	Replicas int `json:"replicas"`
}

// Alarm is an alarm's code: what kind of fault it names. A node raises at
// most one alarm of a code at a time.
type Alarm string

// Alarm codes.
const (
	// AlarmNoSpace: the node's data directory is below its free-space
	// floor (or a write failed for want of space); the node takes no new
	// work until space returns.
	AlarmNoSpace Alarm = "NOSPACE"
	// AlarmCorrupt: the node's ledger (a record that does not match its
	// chain, or a damaged store) cannot be trusted; the node serves no
	// ledger answers until it is rebuilt.
	AlarmCorrupt Alarm = "CORRUPT"
	// AlarmStreamMissing: an agentic stream is gone from JetStream.
	AlarmStreamMissing Alarm = "STREAM_MISSING"
	// AlarmStreamDrift: an agentic stream's configuration differs from the
	// cluster settings in force (limits lowered, replicas changed).
	AlarmStreamDrift Alarm = "STREAM_DRIFT"
	// AlarmConsumerMissing: the executor's durable consumer was gone and
	// had to be made again.
	AlarmConsumerMissing Alarm = "CONSUMER_MISSING"
	// AlarmClockSkew: the node's clock differs from the stream's by more
	// than the protocol's leeway allows.
	AlarmClockSkew Alarm = "CLOCK_SKEW"
	// AlarmRejectFlood: messages the ledger refuses arrive faster than it
	// records them one by one; beyond the rate they are counted and
	// sampled, not each kept.
	AlarmRejectFlood Alarm = "REJECT_FLOOD"
)

// AlarmData is an alarm a node raised (alarm.raised) or cleared
// (alarm.cleared) about itself: Node is always the signer.
type AlarmData struct {
	// Node is the node the alarm is about (the signer).
	Node string `json:"node"`
	// Alarm is the alarm's code.
	Alarm Alarm `json:"alarm"`
	// Check is the readiness check that found it (node.info's checks).
	Check string `json:"check,omitempty"`
	// Reason says, for people, what is wrong (alarm.raised) or what
	// cleared it (alarm.cleared).
	Reason string `json:"reason,omitempty"`
	// Since is when the node first saw the fault (its clock).
	Since time.Time `json:"since,omitzero"`
}

// CredentialRevokedData revokes the credentials of one identity
// (credential.revoked, by an administrator): every credential of Kind and
// ID issued at or before Before. Ledger nodes refuse the events such a
// credential signs from this event's stream position on (code
// credential_revoked); earlier ones stay in the ledger. NATSUsers are the
// NATS user keys of those credentials that the administrator had the
// servers refuse too (bus/natsauth: the AGENTIC account JWT lists them),
// so that a later revocation can list them again.
type CredentialRevokedData struct {
	// Kind is "node" or "operator" (trust.KindNode, trust.KindOperator).
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Before: credentials issued at or before this time are revoked; a
	// credential issued later (the identity enrolled again) is not.
	Before    time.Time `json:"before"`
	NATSUsers []string  `json:"nats_users,omitempty"`
	Reason    string    `json:"reason"`
}
