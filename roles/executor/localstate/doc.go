// Package localstate is an executor's crash memory: which task attempts it
// started and which it finished, and the leader elections it has seen, kept
// in the executor's own Pebble store.
//
// An executor marks an attempt started before it forks the step and
// finished after it has durably emitted the result. After a crash, the
// attempts that are started but not finished (Unfinished) are the ones whose
// processes may have partly run: the executor reports them as interrupted
// instead of silently forgetting them, and refuses to run a redelivered
// assignment for an attempt it already finished.
//
// The elections (RaiseEpoch, EpochAt) let the executor apply the ledger's
// fencing rule to the assignments it receives: a decision whose epoch is
// older than the newest leader.elected before it in the stream is a deposed
// leader's and is not acted on. Elections are keyed by stream sequence, so
// the rule holds even when JetStream redelivers a message after later ones.
//
// Invariants:
//
//  1. Every write is synced (pebble.Sync) before the method returns
//     (BeginStarted: before the wait it returns returns); a nil error
//     means the record survives power loss. A failed sync is returned
//     wrapped in ErrSync and the node must stop; every later write fails
//     with ErrSync too. Attempt records are group-committed: one commit
//     loop takes every MarkStarted/MarkFinished request queued while the
//     previous commit synced and writes them in one synced batch, so
//     concurrent records share an fsync (never NoSync). A failed sync fails
//     every request of its group.
//  2. An attempt moves only forward: started → finished. MarkStarted on a
//     finished attempt fails with ErrFinished; MarkFinished is idempotent.
//     An attempt cancelled before it started is recorded dropped
//     (MarkDropped, only if it has no record yet) and never starts:
//     MarkStarted fails with ErrDropped.
//  3. The unfinished index ("u/" keys) holds exactly the attempts whose
//     record ("a/" keys) is in state started; both change in one batch.
//  4. Recorded epochs ("l/" keys) strictly increase with the stream
//     sequence, so EpochAt is one seek.
//
// Lookups, and the reads the commit loop makes before it writes, are
// answered from memory when they can be (see known): the records the store
// committed last, and, for each run whose records Pebble was read to hold
// none, the keys committed since — so that a new attempt of such a run is
// proved new without a read of Pebble. Only the store writes its records
// (Pebble locks the directory), so that memory is exact; what it cannot
// answer — a run with records from an earlier incarnation, a bound
// reached — is read from Pebble.
//
// Example:
//
//	st, err := localstate.Open(filepath.Join(dataDir, "executor"), logger)
//	if err != nil { return err }
//	defer st.Close()
//	left, _ := st.Unfinished() // report these as interrupted
//	_ = st.MarkStarted(localstate.Attempt{Run: run, Step: step, Attempt: 1, Started: time.Now(), PID: pid})
//	_ = st.MarkStarted(a1, a2, a3) // several attempts, one commit
//	// ... run the step, emit task.finished ...
//	_ = st.MarkFinished(run, step, 1)
//	_ = st.MarkDropped(localstate.Attempt{Run: run, Step: step, Attempt: 2}) // cancelled before it started
//	_, _ = st.RaiseEpoch(streamSeq, 9) // a leader.elected at streamSeq
//	fence, _ := st.EpochAt(assignmentSeq) // drop assignments below fence
package localstate
