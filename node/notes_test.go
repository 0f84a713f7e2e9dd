package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/improve"
)

// TestPromptCarriesPinnedNotRetiredNotes: `ls` of a directory failed 3
// times (the command statistics' automatic note appears), then, once the
// directory existed, succeeded 5 times (the statistics drop the note);
// `cat` of a missing file failed 3 times, then 5 more. The leader
// proposes to pin auto:ls (the note helped) and to retire auto:cat (it did
// not); once operators approve both, a planner's prompt for the family
// carries the pinned note, which the statistics alone no longer give,
// and no longer the automatic note about `cat`, which they still give.
func TestPromptCarriesPinnedNotRetiredNotes(t *testing.T) {
	prompts := make(chan string, 64)
	srv := modelServer(t, `{"steps": [{"id": "hello", "run": "echo hello"}]}`, prompts)
	cfg := nodetest.Config(t.TempDir())
	cfg.Planner.BaseURL, cfg.Planner.Model = srv.URL+"/v1", "test-model"
	n := nodetest.Start(t, cfg)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "later")
	file := filepath.Join(t.TempDir(), "missing")
	runs := func(cmd string, count int, want event.RunStatus) {
		t.Helper()
		plan := "family: web\nsteps:\n  - id: s\n    run: " + cmd + "\n"
		for range count {
			if r := n.WaitRun(t, n.Submit(t, "p.yaml", plan), 30*time.Second); r.Status != want {
				t.Fatalf("run %s of %q: %s (%s), want %s", r.ID, cmd, r.Status, r.Reason, want)
			}
		}
	}
	runs("ls "+dir, 3, event.RunFailed)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runs("ls "+dir, 5, event.RunSucceeded)
	runs("cat "+file, 8, event.RunFailed)

	publish := func(typ event.Type, v any) {
		t.Helper()
		if err := bus.PublishSigned(ctx, n.JS, n.Operator, event.MustDraft(typ, "", v)); err != nil {
			t.Fatal(err)
		}
	}
	publish(event.ImproveEval, event.ImproveEvalData{Now: true})
	var pin, retire improve.Proposal
	poll.Eventually(t, 30*time.Second, "a pin of auto:ls and a retire of auto:cat", func() bool {
		var ps []improve.Proposal
		if err := n.API.Call(ctx, api.MethodProposalsList, api.ProposalsRequest{}, &ps); err != nil {
			return false
		}
		for _, p := range ps {
			switch {
			case p.Pattern == improve.PatternNoteHelps && p.Subject == "auto:ls":
				pin = p
			case p.Pattern == improve.PatternNoteUnhelpful && p.Subject == "auto:cat":
				retire = p
			}
		}
		return pin.ID != "" && retire.ID != ""
	})
	var shown improve.Proposal
	if err := n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: pin.ID}, &shown); err != nil || shown.Validation.Method != "forbidden-checks" {
		t.Fatalf("proposals.show %s: validation %+v (%v), want the forbidden-change checks only", pin.ID, shown.Validation, err)
	}
	planPrompt := func(goal string) string {
		t.Helper()
		d := event.MustDraft(event.GoalSubmitted, event.NewID(), event.GoalSubmittedData{Goal: goal, Text: goal, Family: "web"})
		if err := bus.PublishSigned(ctx, n.JS, n.Operator, d); err != nil {
			t.Fatal(err)
		}
		n.WaitRun(t, d.Run, 30*time.Second)
		for {
			select {
			case got := <-prompts:
				if !strings.Contains(got, "You write the text of a proposal") {
					return got
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no planner prompt")
			}
		}
	}
	pinText := pin.Change.Note.Text
	if got := planPrompt("before approval"); strings.Contains(got, pinText) || strings.Contains(got, "`ls`") || !strings.Contains(got, "`cat` failed 8 of 8 times") {
		t.Fatalf("prompt before approval (no note about ls: the statistics dropped it; the automatic note about cat):\n%s", got)
	}
	for _, id := range []string{pin.ID, retire.ID} {
		publish(event.ProposalApproved, event.ProposalDecidedData{Proposal: id})
	}
	poll.Eventually(t, 30*time.Second, "both proposals applied", func() bool {
		for _, id := range []string{pin.ID, retire.ID} {
			var got improve.Proposal
			if n.API.Call(ctx, api.MethodProposalsShow, api.ProposalRequest{ID: id}, &got) != nil || got.Status != improve.StatusApplied {
				return false
			}
		}
		return true
	})
	if got := planPrompt("after approval"); !strings.Contains(got, pinText) || strings.Contains(got, "`cat` failed") {
		t.Fatalf("prompt after approval (the pinned note about ls, no note about cat):\n%s", got)
	}
}
