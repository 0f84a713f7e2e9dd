package envelope_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
)

// benchDrafts are realistic drafts without secrets: a task.finished with
// a 4 KiB output tail, a task.assigned, a plan.proposed of 200 steps.
func benchDrafts() []event.Draft {
	at := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	tail := strings.Repeat("go: downloading github.com/nats-io/nats.go v1.37.0\n"+
		"ok  \tgithub.com/agentic-dev/agentic/bus/redact\t0.412s\tcoverage: 81.2% of statements\n"+
		"[INFO] compiled 120 files in 3.2s (cache hit 3f2a9c1e8b7d6f5a)\n", 30)[:4096]
	step := func(i int) event.Step {
		return event.Step{ID: fmt.Sprintf("step-%03d", i), Title: fmt.Sprintf("build module %d", i), Kind: event.KindShell,
			Run: fmt.Sprintf("cd module-%d && go build ./... && go test -count=1 ./...", i), DependsOn: []string{fmt.Sprintf("step-%03d", max(i-1, 0))},
			Timeout: event.Duration(10 * time.Minute), Retries: 2, Idempotent: true}
	}
	plan := event.Plan{Goal: "build and test every module of the monorepo"}
	for i := range 200 {
		plan.Steps = append(plan.Steps, step(i))
	}
	return []event.Draft{
		event.MustDraft(event.TaskFinished, "run-1", event.TaskFinishedData{Step: "build", Attempt: 1, Node: "exec-1", Status: event.TaskFailed,
			Class: event.ClassLogic, ExitCode: 2, Error: "exit status 2", Started: at, Duration: event.Duration(3200 * time.Millisecond),
			Cwd: "/srv/app", OutputTail: tail, CommandHash: "3f2a9c1e8b7d6f5a"}),
		event.MustDraft(event.TaskAssigned, "run-1", event.TaskAssignedData{Decision: event.Decision{Epoch: 7}, Step: step(12), Attempt: 1,
			Node: "exec-1", ReadyAt: at, Policy: event.PolicyRef{Version: 3, Hash: "9f86d081884c7d65"}}),
		event.MustDraft(event.PlanProposed, "run-1", event.PlanProposedData{Revision: 1, Source: "planner", Plan: plan}),
	}
}

// BenchmarkAcceptDraft is what an emitter does with each draft before it
// queues it: redact, then check (size, secrets).
func BenchmarkAcceptDraft(b *testing.B) {
	for _, d := range benchDrafts() {
		b.Run(string(d.Type), func(b *testing.B) {
			b.SetBytes(int64(len(d.Data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := acceptDraft(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func acceptDraft(d event.Draft) (event.Draft, error) { return envelope.RedactCheckDraft(d) }

// BenchmarkSign measures signing a checked draft as an outbox does
// (SignChecked), and a batch of 16 task.started events.
func BenchmarkSign(b *testing.B) {
	id, err := trust.NewIdentity(mustRoot(b), "exec-1", trust.KindNode, []string{event.RoleExecutor, event.RolePlanner, event.RoleOrchestrator}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]event.Draft, 16)
	for i := range batch {
		batch[i] = event.MustDraft(event.TaskStarted, "run-1", event.TaskStartedData{Step: fmt.Sprint("step-", i), Attempt: 1, Node: "exec-1"})
	}
	cases := [][]event.Draft{batch}
	for _, d := range benchDrafts() {
		cases = append(cases, []event.Draft{d})
	}
	for _, drafts := range cases {
		name := string(drafts[0].Type)
		if len(drafts) > 1 {
			name = fmt.Sprintf("%s×%d", name, len(drafts))
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := envelope.SignChecked(id, drafts, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustRoot(b *testing.B) *trust.Root {
	root, err := trust.NewRoot()
	if err != nil {
		b.Fatal(err)
	}
	return root
}
