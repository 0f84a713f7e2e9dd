// Package executor is the executor role: it consumes the task assignments
// addressed to its node (agentic.ev.task.assigned.<node>), runs each step
// attempt with the runner (a process group per step, timeouts, bounded
// output), streams the output to the logs stream and reports
// task.started / task.finished through the node's outbox.
//
// # The core and the loop
//
// What the executor decides — which message is acknowledged, refused or
// terminated, which attempt is recorded, started, dropped or killed, when
// a drain completes — is decided by its core (package core): a pure state
// machine that imports no NATS, starts no process and reads no clock; its
// inputs are deliveries (with stream sequence and delivery count), answers
// of local-state records, process exits, reported results, ticks; its
// outputs are actions. One goroutine, the loop, owns it: it steps the core
// and carries out its actions (loop.go), and publishes the core's
// snapshot through an atomic pointer for readers (Stats, metrics, the
// reporter, the backlog watchers).
//
// The durable consumer also delivers the node's task.cancel, every
// leader.elected and every node.drain. Its callback only appends each
// message to an inbox and returns: it never waits for a slot, so a cancel,
// an election or a drain behind assignments waiting for a slot is read at
// once. The other goroutines (starters, attempts, watchers) hand the loop
// inputs the same way. The loop handles the inbox in delivery order — it
// verifies each message and reads what the core needs of the local state
// (the epoch in force at its stream sequence, its attempts' records) —
// and after each batch the core takes queued attempts in arrival order
// while slots are free; a starter goroutine records them started (one
// synced commit, shared with concurrent records) and then starts them —
// the loop never waits for that fsync. Every attempt starts in one place,
// attempt (loop.go), which dispatches by kind (runStep). An attempt's slot
// frees as soon as its process group is gone, before its result is
// reported, so the next queued attempt starts while the result travels to
// the leader.
//
// # Capacity: slots and queue
//
// The executor accepts up to Slots running plus Queue waiting attempts
// (Capacity) and announces both in executor.online: a leader counts
// Slots + Queue, so that a free slot finds its next attempt already here
// instead of waiting a whole orchestration round trip. An assignment
// message that would go beyond Capacity is refused: given back to the
// server (NakWithDelay, refuseDelay) and delivered again later, when there
// may be room; it is never started early nor held. A message is taken
// whole, so one arriving while the executor holds nothing is taken even if
// it carries more than Capacity attempts.
//
// # Acknowledgements
//
// An assignment message is acknowledged only when every attempt it
// carries is durably settled: recorded started (localstate, synced) or
// recorded dropped, or run (noop: its result emitted, synced, first), or
// not this executor's to run (another node's, a deposed leader's, already
// recorded). While its attempts are queued it stays unacknowledged, so a
// crash loses nothing: the server delivers it again. The loop keeps such
// messages from being redelivered meanwhile (InProgress every AckWait/3),
// and recognises a redelivery of a message it holds by its stream
// sequence. The consumer's MaxAckPending (at least 4096, and 4 ×
// Capacity) leaves room behind the queued messages for the control
// messages, which are acknowledged as soon as they are acted on: an
// election once recorded (synced), a cancel once its drops are recorded.
// Stop gives every message it holds back to the server (Nak), so the next
// start receives them at once rather than after AckWait.
//
// Invariants:
//
//  1. An attempt runs at most once per executor: before a shell step starts,
//     the attempt is recorded (synced) in the executor's local state; a
//     redelivered or replayed assignment for a recorded attempt is not run
//     again. noop steps have no side effects and are not recorded. The
//     attempts the loop starts together are recorded in one commit, shared
//     with concurrent records, before any of them starts; if that commit
//     fails, none of them starts.
//  2. Results are durable before they are recorded: a step's task.finished
//     is in the outbox (synced) before its attempt is recorded finished.
//     The reporter emits the task.started / task.finished of concurrent
//     steps in one Emit (every started first, then every finished; a
//     task.started waits at most startedLinger for company; a
//     task.finished waits at most finishedLinger, or until finishedGroup
//     are queued, and only while attempts wait for a slot) and records
//     their attempts finished in one commit.
//  3. After a crash, attempts recorded as started but never finished are
//     reported as failed, class transient, Interrupted (the Error, for
//     people, starts with "interrupted"); the orchestrator re-runs them only
//     if the step is idempotent.
//  4. At most Slots attempts run at once and at most Queue wait; the
//     executor announces Slots, Queue, Capabilities and Version with
//     executor.online when it starts.
//  5. Every message is verified (signature, credential, role) before it is
//     acted on; only an orchestrator's assignment to this node is run.
//  6. A step's processes never outlive the executor (see runner).
//  7. Fencing: each leader.elected is recorded, synced, at its stream
//     sequence (localstate). A task.assigned or task.cancel whose epoch is
//     below the newest election before it in the stream — the ledger's own
//     rule, event.Decision.FencedBy — is a deposed leader's: it is
//     acknowledged without being acted on, logged and counted
//     (Stats.Fenced). At start the newest election on the stream is
//     recorded too, since the consumer delivers only what follows it.
//  8. Cancels (any code; "superseded" when the leader gave the attempt to
//     another node): a running attempt's process group is killed (SIGTERM,
//     then SIGKILL) and its task.finished reported cancelled — the fold
//     records a superseded attempt's result and ignores it. A queued
//     attempt is dropped: recorded dropped (localstate.MarkDropped, synced),
//     never started, reported cancelled without a task.started. A cancel
//     for an attempt not received yet is recorded dropped too, so that its
//     assignment, delivered later (or again), never runs.
//  9. Backlog: at Start — and when the consumer is recreated, and when the
//     loop finds it did not run for stallGap (the process was stopped, as
//     by kill -STOP) — nothing starts until the messages pending on the
//     consumer at that moment have been read (see backlog), so that a node
//     back after being declared dead reads the cancel that superseded an
//     attempt before it could start it.
//  10. Drain: a node.drain naming this node stops all starts (the queue
//     stays, unacknowledged: the leader reassigns those attempts and
//     cancels them here); once no attempt runs or reports, the drain is
//     recorded completed (local state), its message acknowledged and
//     Drained is closed; agentd then stops and exits 0. A drain belongs to the incarnation that completes it: one
//     interrupted by a stop is delivered again and honoured by the next
//     start, one completed is acknowledged, and a node restarted after it
//     serves again.
//  11. A failed fsync of the local state halts the executor: it calls
//     Config.OnFatal once and starts nothing more; what it has not started
//     stays unacknowledged for the next start.
//  12. Stop starts nothing more: queued assignments are given back to the
//     server, running attempts may finish until Stop's context ends and
//     are then killed and reported as interrupted (Interrupted, as in 3).
//  13. Consumer repair (consumer.go): the executor records in its local
//     state the consumer's ack floor + 1 (read every positionPoll), a
//     position below which every message was acknowledged. A consumer
//     found missing — at Start, by a consume error, or by that read — is
//     made again delivering from the position, never from "new" (only a
//     first start, with no position recorded, delivers new messages only).
//     What it delivers again is recognised: a recorded attempt never runs
//     again (1), a held message is matched by its stream sequence, an
//     election or a cancel again changes nothing, a completed drain is
//     recorded and not honoured twice; the backlog rule (9) applies. A
//     consumer made again carrying the deleted one's state (messages
//     "delivered" to nobody) is deleted and made again. The "consumer"
//     check (Checks) fails from the moment the consumer is found missing
//     until it was made again.
//  14. Safety (safety.go, docs/policy.md "The executor"): before a step
//     attempt runs, the executor judges it again with the policy version
//     its assignment names, fetched with policy.show (Config.Safety
//     .Policies; cached by hash) and checked against that hash. It never
//     runs an attempt whose version it cannot fetch or verify, whose
//     working directory lies outside the policy's file scope, that the
//     policy denies, or that the policy gates and the assignment's
//     approval is not of exactly (event.GateSubject): those fail with
//     class policy, without a task.started. An assignment naming no
//     policy (a leader older than protocol version 5) runs as before.
//     An attempt the loop starts whose policy version is cached is judged
//     while its start is recorded (on the starter goroutine, beside the
//     fsync, not after it: judging changes nothing an attempt that never
//     starts would undo); it still starts only once its record is synced
//     (1). One whose version must be fetched is judged when it runs.
//     Config.Safety also sets the runner's hardening: environment
//     allowlist, user (never root by default when agentd is root),
//     resource limits and Landlock.
//
// Where each invariant is held. The core's golden scripts
// (core/testdata/*.txt, run by core.TestGolden with the real local state
// and no NATS server) and its property test (core.TestProperties: random
// inputs; at most one start per attempt, none before its record or after
// its cancel or from a deposed leader, no acknowledgement before the
// record, drains finish) hold what the core decides; the shell's tests
// hold the rest, and the whole against a real JetStream:
//
//   - 1: admission.txt (recorded before started, redeliveries, noops, a
//     failed record); TestFailedGroupCommitStartsNothing.
//   - 2 (the reporter, not the core): TestResultsGroupedWhileBusy,
//     TestStartedAloneGoesOut.
//   - 3 (the shell, at Start): TestRestartReportsInterrupted; stop.txt
//     shows the record it reads.
//   - 4: capacity.txt.
//   - 5: verify.txt (other nodes' messages, refused ones);
//     TestForgedElectionIsRefused for the verification itself.
//   - 6 (the runner, not the core): runner.TestStepDiesWithKilledExecutor.
//   - 7: fencing.txt; TestStaleAssignmentIsNotRun,
//     TestAssignmentBeforeElectionStillRuns, TestEpochSeededFromStream.
//   - 8: cancel.txt.
//   - 9: backlog.txt; TestStoppedExecutorReadsBacklogAndKillsSuperseded.
//   - 10: drain.txt; TestDrain, TestDrainSurvivesRestart.
//   - 11 (the shell halts, the core holds): halt.txt, fencing.txt (an
//     election that fails to sync); TestFailedSyncIsFatal.
//   - 12: stop.txt; TestStopStartsNothingFetched.
//   - 13: consumer.txt; TestConsumerDeletedWithWorkInFlight,
//     TestCompletedDrainNotHonouredAgain and the other tests of
//     repair_test.go.
//   - 14 (the shell, before an attempt runs): the tests of safety_test.go;
//     TestJudgedWhileRecording (judged beside the record, started after it).
//
// Example (the node does this wiring):
//
//	ex := executor.New(env, executor.Config{JS: js, Verifier: v, StateDir: dir, Slots: 4, Queue: -1, OnFatal: nodeFail,
//		Safety: executor.SafetyFrom(cfg.Executor, api.NewClient(nc, 0))})
//	if err := ex.Start(ctx); err != nil { return err }
//	defer ex.Stop(drainCtx)
//	<-ex.Drained() // a node.drain completed: stop the node
package executor
