package redact

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// scanPayloads are realistic event payloads without secrets: a
// task.finished with a 4 KiB output tail, a task.assigned, a plan.proposed
// of 200 steps.
func scanPayloads(tb testing.TB) []struct {
	name string
	data []byte
} {
	at := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	finished := event.TaskFinishedData{
		Step: "build", Attempt: 1, Node: "exec-1", Status: event.TaskFailed, Class: event.ClassLogic, ExitCode: 2,
		Error: "exit status 2", Started: at, Duration: event.Duration(3200 * time.Millisecond), Cwd: "/srv/app", User: "agent",
		OutputTail: output[len(output)-4096:], CommandHash: "3f2a9c1e8b7d6f5a",
	}
	step := func(i int) event.Step {
		return event.Step{ID: fmt.Sprintf("step-%03d", i), Title: fmt.Sprintf("build module %d", i), Kind: event.KindShell,
			Run: fmt.Sprintf("cd module-%d && go build ./... && go test -count=1 ./...", i), DependsOn: []string{fmt.Sprintf("step-%03d", max(i-1, 0))},
			Timeout: event.Duration(10 * time.Minute), Retries: 2, Idempotent: true}
	}
	assigned := event.TaskAssignedData{Decision: event.Decision{Epoch: 7, Basis: 1234}, Step: step(12), Attempt: 1, Node: "exec-1",
		ReadyAt: at, Policy: event.PolicyRef{Version: 3, Hash: "9f86d081884c7d65"}}
	plan := event.Plan{Goal: "build and test every module of the monorepo"}
	for i := range 200 {
		plan.Steps = append(plan.Steps, step(i))
	}
	proposed := event.PlanProposedData{Revision: 1, Source: "planner", Plan: plan, Rationale: "one step per module, in dependency order"}
	out := []struct {
		name string
		data []byte
	}{}
	for _, p := range []struct {
		name string
		v    any
	}{{"task.finished", finished}, {"task.assigned", assigned}, {"plan.proposed-200", proposed}} {
		b, err := json.Marshal(p.v)
		if err != nil {
			tb.Fatal(err)
		}
		if _, found := Scan(b); found {
			tb.Fatalf("%s: the payload holds a secret", p.name)
		}
		out = append(out, struct {
			name string
			data []byte
		}{p.name, b})
	}
	return out
}

// BenchmarkScan is the cost of judging a payload: as a receiver does
// (Set.FindJSON, the current version's set) and as the signer does (Scan: Latest
// and the known values).
func BenchmarkScan(b *testing.B) {
	for _, p := range scanPayloads(b) {
		b.Run("receiver/"+p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, found := Set3.FindJSON(p.data); found {
					b.Fatal("found a secret")
				}
			}
		})
		b.Run("signer/"+p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, found := Scan(p.data); found {
					b.Fatal("found a secret")
				}
			}
		})
	}
}
