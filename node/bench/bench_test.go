package bench

// The five figures of `make bench`, in the order of the README. Each runs
// its work once per b.Loop iteration (make bench: -benchtime 1x) and
// reports its figures with b.ReportMetric; ns/op is suppressed because the
// time of one iteration is not a figure.

import (
	"testing"
	"time"
)

// BenchmarkJetStreamAsyncPublish is figure (a), the baseline: raw
// PublishAsync of 256-byte messages, window 4096, into AGENTIC_EVENTS (the
// product's stream configuration) on the product's embedded server
// configuration (sync_interval: always). Reported: msgs/s from the first
// publish to the last acknowledgement.
func BenchmarkJetStreamAsyncPublish(b *testing.B) {
	var msgs int
	var took time.Duration
	for b.Loop() {
		n, d := publishBaseline(b, baselineMsgs)
		msgs += n
		took += d
	}
	b.ReportMetric(float64(msgs)/took.Seconds(), "msgs/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkLedgerPipeline is figure (b): events/s through the whole durable
// path of one node — sign, outbox (Pebble, Sync), JetStream publish
// (sync_interval: always), follower verify, ledger append (Pebble, Sync),
// fold — from the first Emit until the last event is folded out of the
// ledger. It first measures the baseline (figure a) on an identical server
// so that ratio_b_over_a compares two figures of one run.
func BenchmarkLedgerPipeline(b *testing.B) {
	var base, events float64
	var n int
	for b.Loop() {
		bm, bd := publishBaseline(b, baselineMsgs)
		base += float64(bm) / bd.Seconds()
		r := runPipeline(b, pipelineEvents, pipelineEmitters)
		events += r.rate
		n++
		b.ReportMetric(r.payload, "payload_bytes")
		b.ReportMetric(r.perMsg, "events/msg")
		b.ReportMetric(r.emitted, "emit_events/s")
		b.ReportMetric(float64(r.tail.Microseconds())/1000, "tail_ms")
		b.ReportMetric(r.cpu, "cpu_util")
	}
	base, events = base/float64(n), events/float64(n)
	b.ReportMetric(events, "events/s")
	b.ReportMetric(base, "baseline_msgs/s")
	b.ReportMetric(events/base, "ratio_b_over_a")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkNoopSteps2000 is figure (c): a full node (every role, executor
// with 50 slots) runs a 2,000-step noop plan of width 50, submitted as a
// goal.submitted event signed by the operator. Timed from the submit until
// run.finished is published; reported as steps/s. The noop steps make it a
// measure of the machinery: planning, every decision and result through
// outbox, JetStream and ledger, and the orchestrator's decisions.
//
// Diagnostics: stream_msgs (messages the run put on the stream), the p50
// of the two legs of a step's dispatch (see BenchmarkDispatchLatency) and
// the CPU share used.
func BenchmarkNoopSteps2000(b *testing.B) {
	steps := noopLayers * noopWidth
	file := noopPlan(noopLayers, noopWidth)
	var sum noopResult
	var decide, deliver durations
	for b.Loop() {
		b.StopTimer()
		bn := startNode(b, noopSlots)
		b.StartTimer()
		r := runNoopPlan(b, bn, file, steps)
		sum.took += r.took
		sum.firstAssign += r.firstAssign
		sum.cpu += r.cpu
		sum.msgs += r.msgs
		decide, deliver = append(decide, r.decide...), append(deliver, r.deliver...)
		b.StopTimer()
		bn.Stop(b)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(steps)*n/sum.took.Seconds(), "steps/s")
	b.ReportMetric(float64(sum.took.Milliseconds())/n, "run_ms")
	b.ReportMetric(float64(sum.firstAssign.Milliseconds())/n, "submit_to_first_assign_ms")
	b.ReportMetric(float64(sum.msgs)/n, "stream_msgs")
	b.ReportMetric(decide.quantile(0.5), "ready_to_assigned_p50_ms")
	b.ReportMetric(deliver.quantile(0.5), "assigned_to_started_p50_ms")
	b.ReportMetric(sum.cpu/n, "cpu_util")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDispatchLatency is figure (d): the dispatch latency of steps at
// a steady 100 steps/s. A full node (as in figure c) gets a 1-step noop
// run every 10 ms for 5 s — 1-step runs, because a single plan cannot
// release its steps at a steady pace. For each step it takes, from the
// ledger through the audit API, TaskStarted's time − TaskAssigned.ReadyAt:
// from the moment the step became ready (its plan accepted) through the
// leader folding that, deciding, emitting the assignment, and the executor
// receiving and starting it. Reported: p50 and p99 in ms, and the two legs
// ready→assigned (leader) and assigned→started (delivery) at p50/p99, and
// the pace achieved (steps_submitted/s: below 100 when a submit took longer
// than 10 ms).
func BenchmarkDispatchLatency(b *testing.B) {
	var all, decide, deliver durations
	var rate float64
	for b.Loop() {
		b.StopTimer()
		bn := startNode(b, noopSlots)
		b.StartTimer()
		p := paceRuns(b, bn, latencyRuns, latencyEvery)
		all, decide, deliver = append(all, p.dispatch...), append(decide, p.decide...), append(deliver, p.deliver...)
		rate += p.rate
		b.StopTimer()
		bn.Stop(b)
		b.StartTimer()
	}
	b.ReportMetric(all.quantile(0.50), "p50_ms")
	b.ReportMetric(all.quantile(0.99), "p99_ms")
	b.ReportMetric(all.quantile(1), "max_ms")
	b.ReportMetric(decide.quantile(0.50), "ready_to_assigned_p50_ms")
	b.ReportMetric(decide.quantile(0.99), "ready_to_assigned_p99_ms")
	b.ReportMetric(deliver.quantile(0.50), "assigned_to_started_p50_ms")
	b.ReportMetric(deliver.quantile(0.99), "assigned_to_started_p99_ms")
	b.ReportMetric(float64(len(all)), "steps")
	b.ReportMetric(rate/float64(b.N), "steps_submitted/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAgentdRSS is figure (e): the resident memory of an idle agentd —
// every role, embedded nats-server, empty data directory — read from
// /proc/<pid>/status (VmRSS) 2 s after /readyz answered. The binary is
// built from this tree into a temporary directory. Reported in MB (MiB);
// vmhwm_MB is the peak resident memory of the same process until then.
func BenchmarkAgentdRSS(b *testing.B) {
	bin := buildAgentd(b)
	var rss, hwm float64
	for b.Loop() {
		r, h := idleRSS(b, bin)
		rss += r
		hwm += h
	}
	b.ReportMetric(rss/float64(b.N), "rss_MB")
	b.ReportMetric(hwm/float64(b.N), "vmhwm_MB")
	b.ReportMetric(0, "ns/op")
}
