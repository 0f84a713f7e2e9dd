// Package telemetry is the telemetry export: a documented projection of
// the ledger into flat records, one JSON object a line, that dashboards
// (Grafana, Loki), jq and the self-improvement loop read
// (docs/telemetry.md has the schema with every field).
//
// A Projector folds ledger events in ledger order and emits a Record for
// each fact of interest: every finished step attempt (kind step, or
// tool_call for a tool step, or task_failure when it failed), every run
// that ended (run), every operator correction at a gate or of a held step
// (user_correction), every rating (feedback) and every escalation to an
// operator (a gate opened, a step held for a decision, a run stopped by a
// budget). Each record carries the run's goal, the attempt's command and
// risk level, the planner's model and version, and the ledger position of
// the event it comes from (Seq), so that a finding can cite its evidence.
//
// Invariants:
//
//  1. The projection is a pure function of the events, in order: the
//     same ledger gives the same records on every node and every time.
//  2. Memory is bounded whatever the length of the ledger: the projector
//     keeps context (goal, planner, commands) only for the runs still
//     live, at most MaxRuns of them (the least recently seen are
//     forgotten first), and at most MaxCommand bytes of each command.
//  3. Every string a record carries is redacted again (bus/redact) on
//     top of the redaction every payload had at creation.
//  4. A record whose context came before the window the projector saw
//     (an export with --since that starts mid-run) has those fields
//     empty, never guessed.
//
// Usage:
//
//	p := telemetry.NewProjector()
//	for ev := range events {
//		if err := p.Project(ev, func(r telemetry.Record) error {
//			return enc.Encode(r)
//		}); err != nil { ... }
//	}
package telemetry
