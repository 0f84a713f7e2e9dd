// Package planner is the planner role: it turns submitted goals into plan
// proposals.
//
// The role folds the ledger like every role (roles.Folder). A goal.submitted
// opens a run that needs a plan; a plan.proposed or plan.rejected for the
// run (from any planner node) or a run.cancel closes it. When the node is
// live (Settled(true)), every run still open is planned on the role's own
// goroutines — Fold never blocks — and the result is emitted through the
// node's outbox:
//
//   - a goal with a plan file: FileSource parses it (plan.Parse) →
//     plan.proposed{revision: 1, source: "file", plan};
//   - a malformed plan file → plan.rejected whose error lists every problem
//     as file:line:col;
//   - a free-text goal → the Config.Text source (roles/planner/llm).
//
// A plan file is planned at once, unclaimed: every planner reads it into
// the same plan, and the orchestrator takes the first proposal of a
// revision and ignores the others, so a claim would only add a round trip
// through the ledger before the run starts (with several planners, the
// ledger holds one proposal per planner that saw the goal before the
// first proposal was folded). A goal that carries its plan file's plan
// (plan.FromGoal) is planned by the leader from the goal; its file is
// proposed only if no plan.accepted of the run was folded GoalPlanGrace
// later (a leader of an older release waits for a proposal), so the
// ledger holds the plan once, in the goal. Free text is claimed: a planner that can
// plan it (one with a model) first emits plan.claimed, and plans only if
// its claim is the first the ledger folded for the run; the others leave
// the run alone until that claim's Until passes (a planner that died),
// then claim it in turn. A planner that cannot plan a goal
// does not claim it; when no claim came within Config.ClaimTimeout of the
// goal, it rejects the run with code no_planner, saying why it could not
// plan it.
//
// Critique steps are jobs too (critique.go): a critique.requested opens
// one (a later attempt replaces it), its critique.recorded or the run's
// run.finished closes it. A planner whose Config.Text is a
// CritiqueSource (the model) claims it (plan.claimed with the step and
// attempt), judges it and emits critique.recorded; when no claim came
// within the claim timeout of the request, any planner records verdict
// error with code no_planner.
//
// Invariants:
//
//  1. Nothing is planned before the node is live, and a run is planned at
//     most once per process while its proposal is in flight: a run stays
//     taken from the moment a job takes it until its proposal is folded.
//     Across planners, only the holder of the run's first claim plans a
//     free-text goal or a replan (two plan only if one's claim lapsed
//     while it still planned; the orchestrator takes the first proposal);
//     a plan file may be proposed by every planner, each proposal the same
//     plan.
//  2. Restarts: the open runs are restored from the role's snapshot
//     (roles.Snapshotter: the pending runs, with a format version) plus the
//     ledger events after it, or folded again from the start when there is
//     no usable snapshot, so a goal
//     submitted before a crash is planned after the restart, exactly once —
//     unless the crash fell between emit and commit, in which case a second
//     proposal with the same revision may appear, which the orchestrator
//     ignores.
//  3. Every plan a Source returns is normalized and validated again
//     (plan.Normalize) before it is proposed, and a proposal that would
//     exceed the event size limit is rejected instead.
//  4. A failed emit is retried with backoff; a job cut short by Stop emits
//     nothing and leaves the run for the next start.
//  5. The fold state holds only the runs still waiting for a plan: a closed
//     run is forgotten. A late second goal.submitted cannot reopen it, since
//     the ledger refuses a goal.submitted for a run id it already knows.
//
// Usage (the node wires this):
//
//	p := planner.New(env, planner.Config{})
//	p.Start(ctx)        // then the node calls p.Fold(ev) / p.Settled(live)
//	defer p.Stop(ctx)
package planner
