package replay_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
	"github.com/agentic-dev/agentic/roles/planner/llm/llmtest"
)

// replanHistory runs a model-planned goal on a real node whose first plan
// has a step that fails once and is retried (on_failure retry) and a step
// that fails and asks for a replan; the model's revision fixes it and the
// run succeeds. It returns the node, the run and the ledger position of
// the replan request and of the retry's assignment.
func replanHistory(t *testing.T) (n *nodetest.Node, run string, replanSeq, retrySeq uint64) {
	t.Helper()
	dir := t.TempDir()
	once, fixed := dir+"/once", dir+"/fixed"
	flaky := map[string]any{"id": "flaky", "run": "test -e " + once + " || { touch " + once + "; exit 3; }",
		"retries": 2, "backoff": "10ms", "on_failure": "retry"}
	plan := func(check string, rationale string) string {
		b, err := json.Marshal(map[string]any{"rationale": rationale, "steps": []any{flaky,
			map[string]any{"id": "check", "run": check, "depends_on": []string{"flaky"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first, revised := plan("test -e "+fixed, ""), plan("touch "+fixed, "create the file the check wants")
	srv := llmtest.Server(t, func(prompt string) string {
		if strings.Contains(prompt, "a step failed") {
			return revised
		}
		return first
	})
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n = nodetest.Start(t, cfg)
	run = event.NewID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(event.GoalSubmitted, run, event.GoalSubmittedData{Goal: "check", Text: "check"})); err != nil {
		t.Fatal(err)
	}
	if r := n.WaitRun(t, run, 60*time.Second); r.Status != event.RunSucceeded || r.Revision != 2 {
		t.Fatalf("run %s: %s (%s) at revision %d", r.ID, r.Status, r.Reason, r.Revision)
	}
	waitEnd(t, n, run)
	for ev, err := range n.API.Events(context.Background(), 0, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Run != run {
			continue
		}
		switch ev.Type {
		case event.PlanReplanRequested:
			replanSeq = ev.Seq
		case event.TaskAssigned:
			var a event.TaskAssignedData
			if err := json.Unmarshal(ev.Data, &a); err != nil {
				t.Fatal(err)
			}
			if a.Step.ID == "flaky" && a.Attempt == 2 {
				retrySeq = ev.Seq
			}
		}
	}
	if replanSeq == 0 || retrySeq == 0 {
		t.Fatalf("history without a replan request (seq %d) or a retry of flaky (seq %d)", replanSeq, retrySeq)
	}
	return n, run, replanSeq, retrySeq
}

// TestReplayAfterReplanAndRetry: a finished run that was replanned and
// had a step retried replays without divergence; a deliberate change to
// the decisions — failures no longer replanned, or a longer backoff — is
// reported at the decision it changes, and only there.
func TestReplayAfterReplanAndRetry(t *testing.T) {
	n, run, replanSeq, retrySeq := replanHistory(t)
	check := func(decide func(*core.State, time.Time, uint64, map[core.DecisionKey]bool) ([]core.Decision, time.Time)) *replay.Report {
		t.Helper()
		rep, err := replay.Check(n.API.Events(context.Background(), 0, nil), replay.Options{Run: run, Decide: decide})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	dump := func(rep *replay.Report) string {
		b, _ := json.MarshalIndent(rep, "", "  ")
		return string(b)
	}

	// Unchanged: every decision reproduced; accepted twice, flaky assigned
	// twice, check twice, the replan request, run.finished.
	if rep := check(nil); rep.Diverged() || rep.Checked < 8 || rep.Reproduced != rep.Checked || rep.Finished != event.RunSucceeded {
		t.Fatalf("unchanged: %s", dump(rep))
	}

	t.Run("replan rule changed", func(t *testing.T) {
		noReplan := func(s *core.State, now time.Time, epoch uint64, inflight map[core.DecisionKey]bool) ([]core.Decision, time.Time) {
			ds, wake := core.Decide(s, now, epoch, inflight)
			return slices.DeleteFunc(ds, func(d core.Decision) bool { return d.Draft.Type == event.PlanReplanRequested }), wake
		}
		rep := check(noReplan)
		if len(rep.Divergences) != 1 {
			t.Fatalf("want one divergence: %s", dump(rep))
		}
		d := rep.Divergences[0]
		if d.Seq != replanSeq || d.Type != event.PlanReplanRequested || d.Now != nil || d.Run != run {
			t.Fatalf("divergence %+v, want the replan request at seq %d, missing", d, replanSeq)
		}
		if rep.Reproduced != rep.Checked-1 {
			t.Fatalf("the other decisions: %s", dump(rep))
		}
	})

	t.Run("backoff rule changed", func(t *testing.T) {
		longer := func(s *core.State, now time.Time, epoch uint64, inflight map[core.DecisionKey]bool) ([]core.Decision, time.Time) {
			ds, wake := core.Decide(s, now, epoch, inflight)
			for i := range ds {
				if ds[i].Draft.Type != event.TaskAssigned {
					continue
				}
				var a event.TaskAssignedData
				if err := json.Unmarshal(ds[i].Draft.Data, &a); err != nil {
					t.Error(err)
					continue
				}
				if a.Attempt > 1 {
					a.ReadyAt = a.ReadyAt.Add(a.Step.Backoff.Std())
					ds[i].Draft.Data, _ = json.Marshal(a)
				}
			}
			return ds, wake
		}
		rep := check(longer)
		if len(rep.Divergences) != 1 {
			t.Fatalf("want one divergence: %s", dump(rep))
		}
		d := rep.Divergences[0]
		if d.Seq != retrySeq || d.Type != event.TaskAssigned || d.Now == nil || d.Run != run {
			t.Fatalf("divergence %+v, want the retry's assignment at seq %d, different", d, retrySeq)
		}
	})
}
