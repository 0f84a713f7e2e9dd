// Package executor is the executor role: it consumes the task assignments
// addressed to its node (agentic.ev.task.assigned.<node>), runs each step
// attempt with the runner (a process group per step, timeouts, bounded
// output), streams the output to the logs stream and reports
// task.started / task.finished through the node's outbox.
//
// Invariants:
//
//  1. An attempt runs at most once per executor: before a shell step starts,
//     the attempt is recorded (synced) in the executor's local state; a
//     redelivered or replayed assignment for a recorded attempt is not run
//     again. noop steps have no side effects and are not recorded. The
//     shell attempts of one assignment message are recorded in one commit
//     before any of them starts and before the message is acknowledged; if
//     that commit fails, none of them starts.
//  2. Results are durable before they are recorded: a step's task.finished
//     is in the outbox (synced) before its attempt is recorded finished.
//     The reporter emits the task.started / task.finished of concurrent
//     steps in one Emit (every started first, then every finished; a
//     task.started waits at most startedLinger for company) and records
//     their attempts finished in one commit.
//  3. After a crash, attempts recorded as started but never finished are
//     reported as failed, class transient, Interrupted (the Error, for
//     people, starts with "interrupted"); the orchestrator re-runs them only
//     if the step is idempotent.
//  4. At most Slots attempts run at once; the executor announces its slots
//     with executor.online when it starts.
//  5. Every message is verified (signature, credential, role) before it is
//     acted on; only an orchestrator's assignment to this node is run.
//  6. A step's processes never outlive the executor (see runner).
//  7. Fencing: the executor also consumes leader.elected and records each
//     election, synced, at its stream sequence (localstate). A task.assigned
//     or task.cancel whose epoch is below the newest election before it in
//     the stream — the ledger's own rule — is a deposed leader's: it is
//     acknowledged without being acted on, logged and counted
//     (Stats.Fenced). At start the newest election on the stream is
//     recorded too, since the consumer delivers only what follows it.
//  8. A failed fsync of the local state halts the executor: it calls
//     Config.OnFatal once and takes no new work; what it has not started
//     stays unacknowledged for the next start.
//  9. Stop starts nothing more: fetched assignments not yet started are
//     left (redelivered after a restart), a wait for a slot ends, running
//     attempts may finish until Stop's context ends and are then killed and
//     reported as interrupted (Interrupted, as in 3).
//
// Example (the node does this wiring):
//
//	ex := executor.New(env, executor.Config{JS: js, Verifier: v, StateDir: dir, Slots: 4, OnFatal: nodeFail})
//	if err := ex.Start(ctx); err != nil { return err }
//	defer ex.Stop(drainCtx)
package executor
