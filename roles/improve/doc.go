// Package improve is the cluster's self-improvement loop (docs/improve.md):
// the leader orchestrator reads a window of the ledger (Telemetry, read
// for each pass by ReadWindow and dropped after it), finds patterns with
// fixed rules (Evaluate: a command shape failing, a step timing out, a
// gate always approved, replans fixing the same mistake, runs of a family
// rated down, steps failing transiently with no retries), and proposes a typed change with its
// evidence, root cause, risk, expected effect and rollback
// (proposal.created). Operators approve or reject it; the leader
// validates it again and applies it as the ordinary event of its setting
// (tuning.changed for planner notes, step defaults and plan templates,
// policy.recorded of source proposal for a policy; a repository change
// through the git run an operator submits for it, applied once its pull
// request is recorded, apply_repo.go), then watches the error rate of
// what it touched (Monitor) and ends it implemented, or reverts it with
// its rollback. With a planner model (Config.Drafter), the model drafts a
// new proposal's text and, optionally, a change of the rule's kind that
// replaces the rule's only when it passes the same checks; a model that
// fails or hangs leaves the rules' text (drafted_by says which).
//
// Invariants:
//
//  1. The evaluator is out of the proposer's reach: the rules' and the
//     monitor's thresholds are the build's (DefaultRules,
//     DefaultMonitor); no change may name them, nor the trust root,
//     credentials, NATS permissions, deny rules or budgets upward
//     (Forbidden, checked when a proposal is created, folded and applied).
//  2. Nothing changes without approval: State takes a tuning.changed only
//     for a proposal it folded as approved by the number of distinct
//     operators the proposal names (the policy's approvals for its
//     risk), and only the proposal's own change (or, for an applied one,
//     its rollback). A proposal's policy is recorded by the leader only
//     once approved (roles/policy.Applied accepts source proposal like
//     source remember: naming what operators approved).
//  3. Validation by kind: step defaults are replayed against the recorded
//     attempts (ReplayDefaults: would pass, fail, retry, or cannot say);
//     a policy is re-judged against the recorded commands and must only
//     add rules, the one allow it adds being what gate approve --remember
//     writes for a command no deny, critical, unresolved or irreversible
//     judgement covers (CheckPolicy); notes and templates are checked by
//     the forbidden-change rules only — a replay reads the recorded model
//     answers, so it proves nothing about what planners are told.
//  4. State is pure: the same events give the same proposals and settings
//     on every node; a proposal's id derives from its finding, so two
//     leaders make one proposal.
//  5. Telemetry is bounded: records older than its window, and past
//     MaxRecords of a kind, are dropped. With a Ledger it is not
//     resident: the leader reads it for an evaluation or a validation
//     and drops it; between passes it keeps only the monitor's attempts
//     of applied proposals since their apply (read from the ledger again
//     after a restart or a leader change), a follower nothing.
//
// Usage (the node wires this):
//
//	l := improve.New(improve.Config{Node: name, Emit: emitter, Ledger: store,
//		Epoch: orch.Leader, Digest: digest})
//	// add l to the follower's folders and to the node's roles
//	notes := l.PlannerNotes(family, automatic)
package improve
