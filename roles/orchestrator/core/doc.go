// Package core is the orchestrator role's pure core: a fold (committed
// events in → State) and a decision function (State + time → events to
// emit). Neither does I/O, starts goroutines, reads a clock or draws random
// numbers; the role (package orchestrator: its loop and lease) does the I/O
// around them, as etcd raft's node loop does around its pure state machine.
// That makes replay and golden tests cheap: feed events, compare output,
// ids included. The package imports nothing that reaches NATS, Pebble or
// the gossip layer (TestCoreImportsNoTransport, go list -deps).
//
// Invariants:
//
//  1. Apply is deterministic. The same events in the same order give the
//     same State on every node, and folding from a snapshot
//     (MarshalSnapshot/UnmarshalSnapshot) then the rest gives the same State
//     as folding from zero. Event ids and the local clock are never read.
//  2. Fencing: a decision (plan.accepted, task.assigned, task.cancel,
//     run.finished, leader.elected, node.*) whose epoch is older than the
//     newest leader.elected folded is ignored and counted in State.Fenced.
//     A deposed leader's late writes are in the ledger but have no effect.
//     A leader.elected is accepted only with an epoch strictly above the
//     one in force; one at the same epoch (a second lease winner that
//     read the same epoch from the ledger) is ignored, so one epoch has
//     one leader, and a leader decides only once the ledger shows its own
//     election accepted (package orchestrator, lease.go).
//  3. Attempts: a step's attempts are numbered from 1; only the current
//     attempt's start and result count. Reports about an older attempt, or
//     about one given up (Step.Lost), are counted in State.Superseded and
//     change nothing; a duplicate assignment (not the step's next attempt)
//     is ignored.
//  4. A step holds a place on an executor while assigned or running;
//     Decide never gives a node more steps than its capacity (slots +
//     queue), counting the assignments in flight (emitted, not yet folded
//     back), and gives none to a node that is gone, draining or suspect,
//     nor a step to a node lacking one of its capabilities.
//  5. Retries are deterministic: the backoff's jitter is a hash of
//     run/step/attempt (Backoff), so every node computes the same NotBefore.
//  6. Unknown event types are skipped, never fatal.
//  7. State holds live runs only: a run leaves State.Runs in the fold that
//     gives it a final status, and later events naming it are ignored (and
//     counted in State.Ignored). Memory, Decide and snapshots are bounded by
//     the runs in flight, not by history. What finished runs looked like is
//     kept on disk by the run index (package runindex), which learns what
//     each fold changed from TrackChanges/TakeChanges.
//  8. Decide is a pure function of (State, now, epoch, keys in flight),
//     and ReconcileMembers of the same and the membership view: the same
//     inputs give byte-identical decisions. A decision's event id
//     is DecisionID(epoch, key) (a UUIDv8 hashed from both) and its time is
//     now, which the caller passes.
//  9. A decision applies once per key (DecisionKey: what it does, e.g.
//     assign attempt 3 of step s of run r to node n). Every key names a
//     one-way step — a revision accepted, an attempt assigned or
//     cancelled, a run finished — so a second decision with the same key
//     (a new leader's copy, with another id) is ignored, and fencing
//     ignores an older leader's. Ids differ between epochs; within one a
//     key is decided again only after its emission failed, with the same
//     id, so a ledger keeps one copy (it refuses repeated ids).
//
// Statuses are typed (RunStatus, StepStatus, TaskStatus) and move only
// along one transition table per namespace (status.go): every status change
// of the fold goes through move, which consults the table; a move the table
// does not allow is counted in State.Ignored and changes nothing. A status
// with no successor is final (Terminal). Approved, edited and denied steps
// are in the table but not entered (an approved or edited step is pending
// again, its approval or edit recorded; a denied one is failed, class
// policy). The statuses' values are the protocol's (bus/event: RunStatus,
// StepStatus, TaskStatus), from which this package's constants are
// derived; wire.go alone converts, checking them against the tables.
//
// Run lifecycle (as entered today): submitted → planned → running ⇄
// paused → succeeded | failed | cancelled. Step: pending → (ready) →
// [gated →] assigned → running → succeeded |
// failed | skipped | cancelled; a failed attempt that may be retried goes
// back to pending (NotBefore = backoff) and its next assignment uses
// Attempt+1. Failures are routed by class (see retryable): policy is never
// retried, transient is retried up to the step's Retries (an interrupted
// attempt — task.finished's Interrupted — is re-run up to Retries+1 times
// if the step is idempotent, and not at all otherwise),
// logic only with on_failure "retry". A final failure with
// on_failure "continue" lets dependents run; any other step that ends
// without being done (a final failure, a cancellation) fails the run.
//
// Node loss (reconcile.go, fold_node.go, decide_run.go's check): the
// leader records the gossip membership as node.* events; Decide gives up
// (task.cancel, code superseded) the attempts of a gone executor, the
// queued ones of a draining executor, and those not started StartDeadline
// after they could have been. The fold of that cancel makes the step
// pending again — idempotent, or never started — or holds it in
// needs-decision until an operator's step.decided (retry or skip).
//
// Policy and gates (policy.go, gate.go, decide_gate.go): the policy in
// force is a ledger fact (State.Policy, from policy.applied; Decide
// records the leader's own while there is none, and assigns nothing until
// then). Decide judges each ready step with it before assigning it:
// allow assigns (the assignment names the policy version), confirm opens
// a gate (gate.opened; the step is gated), deny fails the step (class
// policy). Operators answer gates (gate.decided): an accept counts once
// per operator, not from the run's submitter when the gate says so, and
// only while it names the gate's subject (event.GateSubject); with the
// approvals in, the step is pending with its approval recorded and is
// assigned with it. The fold refuses an assignment the policy in force
// does not admit (admitted), whoever made it. A step in needs-decision
// holds a gate too; with approve_plans a plan gate holds a whole run until
// its revision is approved (plangate.go). run.pause/run.resume are an
// operator's brake.
//
// A failed or cancelled step, and a failed or cancelled run, carry a stable
// Code (codes.go, pinned append-only by testdata/codes.golden) beside the
// text for people: a step's from its task.finished (policy_denied,
// interrupted, timed_out, exit_nonzero, ...) or from its run's end
// (dependency_failed, run_ended, cancelled_by_operator); a run's from the
// run.finished that Decide emits (step_failed, plan_invalid, ...) or from
// plan.rejected. Views show it as "code".
//
// Example, one leader turn:
//
//	s := core.NewState()
//	for _, ev := range committed {
//		s.Apply(ev)
//	}
//	decisions, wake := core.Decide(s, time.Now(), epoch, inflight)
//	for _, d := range decisions {
//		inflight[d.Key] = true // until the event d.Draft.ID is folded back
//		drafts = append(drafts, d.Draft)
//	}
//	// emit drafts; call Decide again after the next fold, or at wake.
package core
