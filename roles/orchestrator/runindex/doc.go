// Package runindex is the run index: the runs of the ledger and their steps,
// kept in Pebble beside the ledger records and written in the same batch
// (a ledger.Indexer named "runs"), so that listing, filtering and opening a
// run cost what the answer costs, not what the history costs.
//
// The index folds every record into its own orchestrator.State, which holds
// only the runs still live (a run leaves it in the fold that finishes it),
// and from the changes each fold reports it writes:
//
//	c/<created be64><run id>           → RunSummary JSON (listing order)
//	r/<run id>                         → created be64 (lookup by id or prefix)
//	s/<status>\x00<created be64><id>   → "" (listing by status)
//	p/<run id>\x00<position be32>      → StepView JSON (steps in plan order)
//	g/<created be64><run id><pos be32> → api.Gate JSON (a step's open gate;
//	                                     pos 2^32-1: the run's plan gate)
//	f/<run id>\x00<seq be64>           → apiwire.RunRating JSON (run.rated,
//	                                     kept after the run ended)
//
// where created is the stream time of the run's goal.submitted in Unix
// nanoseconds. A g/ key lives while its step is held at a gate (gated by
// the policy, or in needs-decision) or its run at a plan gate, and is
// deleted in the batch that closes the gate; Gates lists them. A summary is rewritten on every change of its run; a step row
// only when that step's view changed; a status key moves when the status
// does. Layout changes bump Version, and the ledger rebuilds the index.
//
// Invariants:
//
//  1. Reads (Runs, Run, Steps) go to Pebble only, never to the in-memory
//     state: finished and live runs are read the same way, and what a
//     reader sees is committed.
//  2. The entries depend only on the ledger's records: one uninterrupted
//     stream of appends, restarts at any point (snapshot plus replay), and
//     a rebuild from zero give the same entries.
//  3. Memory holds live runs only; the snapshot the ledger saves is that
//     state, small whatever the history.
//
// Costs, measured on an index of 10,000 runs (BenchmarkReads, 2 cores): a
// first or deep page of 50 summaries ≈ 0.2 ms, Run by id prefix ≈ 10 µs,
// the 2,000 steps of a run ≈ 6 ms, a Goal filter that matches nothing
// ≈ 11 ms (ScanBudget runs, then a checkpoint). Pebble's block cache serves
// repeated reads; the index keeps no cache of its own.
//
// Example:
//
//	x := runindex.New(logger)
//	if err := x.Attach(store); err != nil { ... } // before the first Append
//	for e, err := range x.Runs(runindex.Query{Status: "running"}) {
//		if err != nil { ... }
//		if e.Summary == nil { break } // scan checkpoint: resume with e.Cursor
//		fmt.Println(e.Summary.ID, e.Summary.Goal)
//	}
package runindex
