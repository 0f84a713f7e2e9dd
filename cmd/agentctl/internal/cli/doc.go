// Package cli is agentctl: the cobra command tree, run in-process by
// Run(ctx, args, env) so tests drive it against real NATS servers.
//
// Invariants:
//
//  1. Reads go through the query API (node/api) to whichever agentd
//     answers; writes are events signed with the operator credentials and
//     published to JetStream (bus.PublishSigned). agentctl never writes
//     anything else. The one read outside the API is step output (run
//     logs), read from the AGENTIC_LOGS stream with an ordered consumer.
//     Key management (keys init, keys operator, node enroll) only reads
//     and writes key files and never connects to NATS; policy check judges
//     a command with a local policy (roles/policy) and never connects
//     either.
//  2. A plan file is parsed and checked locally before anything is
//     published: a malformed plan exits 1 with every located problem and
//     publishes nothing.
//  3. Errors are one "error:" line on stderr (plus "hint:" when there is
//     one) and exit code 1; usage errors exit 2; goal submit --wait exits 3
//     for a failed run, 4 for a cancelled one; an interrupted command
//     exits 130, except a follow (audit tail --follow, run logs --follow),
//     which Ctrl-C ends normally.
//  4. Output formats: text for people; json (indented; arrays for lists)
//     and jsonl (one compact object per line) for programs, with the
//     shapes documented in docs/cli.md.
//
// Example:
//
//	code := cli.Run(ctx, []string{"run", "list", "-o", "json"}, cli.Env{Version: "v0.1.0"})
//	os.Exit(code)
package cli
