// Package artifacts folds the ledger's artifact.stored events into what
// the leader resolves steps' inputs with and what the query API lists
// (docs/artifacts.md): each run's artifacts by name, its plan family and
// outcome, and each family's latest succeeded run.
//
// Invariants:
//
//  1. The fold is the only judge: an artifact exists for a reader when,
//     and only when, an artifact.stored of it was folded. (The bytes live
//     in the Object Store, bus/artifact; the event is emitted only once
//     they are whole.)
//  2. A name stored twice in a run (a later attempt, a step's retry) is
//     the later one's.
//  3. The state is bounded by the artifacts' retention: a run finished
//     longer than Retention before the newest event folded is forgotten,
//     as the bucket's age limit removes its bytes. Time is the events',
//     so every node's fold, and a replay, forgets at the same position.
//  4. A failed or cancelled run's artifacts are debug data (Retention
//     debug), whatever they were stored as.
package artifacts
