// Package core is the executor's state machine: it decides, and does
// nothing else. It imports no NATS, starts no process, reads no clock and
// touches no disk: the executor (package executor, the shell) hands it
// inputs — deliveries with their stream sequence and delivery count, the
// results of local-state records, process exits, reported results,
// cancels, elections, drains and ticks carrying the time — and carries out
// the actions it returns, in order: acknowledge, refuse or terminate a
// message, record attempts started or dropped, start a recorded attempt's
// process, kill one, report a cancellation, close Drained.
//
// The shape is etcd raft's Step/Ready, as the orchestrator's fold and
// DecideWith: one goroutine owns a Core and calls Step; readers see a
// Snapshot (Core.Snapshot, published by the shell through an atomic
// pointer), never the Core itself.
//
// # Contract with the shell
//
//   - A record action (RecordStarted, RecordDropped, RecordEpochs,
//     RecordDrained, RunNoops) carries an ID; the shell answers it with
//     Recorded{ID, Err} once the record is durable (or failed). The core
//     acknowledges nothing that depends on a record before that answer.
//   - RecordStarted's Start attempts are started by the shell only if the
//     record succeeded, after it; its Ahead attempts are only recorded,
//     and start later through StartRecorded.
//   - Every attempt handed to the shell to start is answered by Exited when
//     its process group is gone and Reported once its result is reported;
//     CancelledBeforeStart with Finish is answered by Reported.
//   - Assignment.Recorded and Cancel.Recorded say whether the local state
//     holds a record of the attempt, and Delivery.Fence is the leader
//     epoch in force at the delivery's stream sequence (the local state's
//     EpochAt): the shell reads them just before Step, on the same
//     goroutine, after carrying out every earlier action.
//
// The golden scripts in testdata (run by TestGolden with the real local
// state on a memory file system, no NATS server) hold the executor's
// numbered invariants; see roles/executor's doc.go for which script holds
// which.
package core
