package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/nodetest"
)

const mixedPlan = `goal: mixed
steps:
  - id: start
    kind: noop
  - id: flaky
    run: exit 3
    depends_on: [start]
    on_failure: continue
  - id: fanout-1
    kind: noop
    depends_on: [start]
  - id: fanout-2
    kind: noop
    depends_on: [start]
  - id: join
    run: echo joined
    depends_on: [flaky, fanout-1, fanout-2]
`

func TestMixedPlanRoutesFailures(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	r := n.WaitRun(t, n.Submit(t, "mixed.yaml", mixedPlan), 30*time.Second)
	if r.Status != event.RunSucceeded {
		t.Fatalf("run %s: %s (%s)", r.ID, r.Status, r.Reason)
	}
	got := map[string]string{}
	for _, s := range r.Steps {
		got[s.ID] = s.Status
	}
	want := map[string]string{"start": "succeeded", "flaky": "failed", "fanout-1": "succeeded", "fanout-2": "succeeded", "join": "succeeded"}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("step %s: %s, want %s", id, got[id], st)
		}
	}
}

const abortPlan = `goal: abort
steps:
  - id: fail
    run: exit 2
  - id: never
    run: echo never
    depends_on: [fail]
`

func TestAbortFailsRun(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	r := n.WaitRun(t, n.Submit(t, "abort.yaml", abortPlan), 30*time.Second)
	if r.Status != event.RunFailed {
		t.Fatalf("status %s, want failed", r.Status)
	}
	for _, s := range r.Steps {
		if s.ID == "never" && s.Status != "cancelled" {
			t.Errorf("dependent of a failed step: %s, want cancelled", s.Status)
		}
		if s.ID == "fail" && (s.ExitCode == nil || *s.ExitCode != 2) {
			t.Errorf("exit code %v, want 2", s.ExitCode)
		}
	}
}

const slowPlan = `goal: slow
steps:
  - id: sleep
    run: sleep 30
`

func TestCancelStopsRunningStep(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	run := n.Submit(t, "slow.yaml", slowPlan)
	poll.Eventually(t, 20*time.Second, "step running", func() bool {
		r, err := n.API.RunsGet(context.Background(), run)
		return err == nil && len(r.Steps) == 1 && r.Steps[0].Status == "running"
	})
	d := event.MustDraft(event.RunCancel, run, event.RunCancelData{Reason: "test"})
	if err := bus.PublishSigned(context.Background(), n.JS, n.Operator, d); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := n.WaitRun(t, run, 20*time.Second)
	if r.Status != event.RunCancelled {
		t.Fatalf("status %s, want cancelled", r.Status)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("cancel took %s", time.Since(start))
	}
}
