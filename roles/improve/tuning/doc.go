// Package tuning is the pure fold of the self-improvement loop
// (docs/improve.md): the proposals and their lifecycle, and the settings
// approved proposals change — the planner notes, the step defaults and
// the plan templates by plan family (template.go) — and the git runs
// that apply repository changes (repo.go). Every ledger node folds it
// (roles/improve), and so does the orchestrator's core, which gives a new
// plan's steps the defaults of its family; it imports nothing but the
// protocol and the plan decoder (roles/planner/plan, pure), so the core
// stays free of I/O.
//
// Invariants:
//
//  1. A tuning.changed changes a setting only for a proposal folded as
//     approved by its number of distinct operators, and only with the
//     proposal's own change (or, once applied, its rollback): a leader
//     cannot change what nobody approved.
//  2. A proposal whose change (or rollback) Forbidden refuses is folded
//     as refused and never moves.
//  3. The leader's events (proposal.created, proposal.applied,
//     proposal.implemented, proposal.reverted, tuning.changed) carry its
//     epoch; one older than the newest leader.elected folded is ignored
//     and counted in State.Fenced (event.Decision.FencedBy), so a deposed
//     leader's late proposal or apply changes nothing. One without an
//     epoch (an earlier build's) is folded as before.
//  4. The same events give the same state on every node.
package tuning
