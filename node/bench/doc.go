// Package bench holds agentic's performance figures as Go benchmarks; it
// has no code outside its tests. `make bench` runs them all once, in one
// process, each on its own embedded nats-server configured like the
// product's (JetStream file storage, sync_interval: always), so that the
// figures of one run can be compared with each other.
//
// The figures (see README.md in this directory for how to read them):
//
//   - BenchmarkJetStreamAsyncPublish: raw JetStream PublishAsync of
//     256-byte messages to a stream configured like AGENTIC_EVENTS — the
//     baseline every other figure is measured against.
//   - BenchmarkLedgerPipeline: signed events through the whole durable
//     path (sign, outbox with Sync, JetStream, verify, ledger commit with
//     Sync), and its ratio to the baseline measured in the same function.
//   - BenchmarkNoopSteps2000: a full node runs a 2,000-step noop plan.
//   - BenchmarkNoopSteps2000Dashboards: the same plan with ten Go SSE
//     clients on the run page's live stream against none, as a ratio.
//   - BenchmarkDispatchLatency: step ready → executor started, at 100
//     steps/s.
//   - BenchmarkAgentdRSS: resident memory of an idle agentd.
//   - BenchmarkShellSteps2000: a full node with the default slots runs
//     2,000 shell steps `run: "true"` (50 chains of 40), and the same
//     2,000 processes are forked with `xargs -P SLOTS sh -c true`:
//     steps/s, raw procs/s and their ratio.
//   - BenchmarkSubmitToStart: a one-step plan file through agentctl to
//     its process, against agentd and agentctl of the base commit.
//   - BenchmarkShellHistory250k: shell steps against raw forks and idle
//     memory, on a node with a ~250k-event history, against the base
//     commit.
//   - BenchmarkMemorySearch100k: memory.search at the query API on a node
//     that folded 100,000 facts and 10,000 research notes: p50 and p99
//     (target p99 ≤ 20 ms).
//
// One test runs without -bench: TestNoopResultsBatched guards the
// executor's batching of noop results that the steps/s figure rests on.
//
// Invariants: only real parts (embedded nats-server, Pebble in temporary
// directories, real nodes and the real agentd binary); every benchmark
// checks that the work it timed was really done (every event in the
// ledger, every step succeeded, every shell step's process started and
// exited 0) and fails otherwise, so a figure is never reported for work
// that did not happen.
//
// Example:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 30m ./node/bench/
//	go test -run '^$' -bench NoopSteps -benchtime 1x -cpuprofile cpu.out ./node/bench/
package bench
