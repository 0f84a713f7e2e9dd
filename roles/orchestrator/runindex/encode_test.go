package runindex

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/canonjson/canonjsontest"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
	"pgregory.net/rapid"
)

func drawTime(t *rapid.T, label string) time.Time {
	switch rapid.IntRange(0, 5).Draw(t, label+" kind") {
	case 0:
		return time.Time{}
	case 1: // Marshal fails
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	case 2:
		return time.Unix(rapid.Int64Range(0, 4e9).Draw(t, label+" s"), 0).In(time.FixedZone("x", 7200))
	}
	return time.Unix(rapid.Int64Range(0, 4e9).Draw(t, label+" s"), rapid.Int64Range(0, 999_999_999).Draw(t, label+" ns")).UTC()
}

func drawTimePtr(t *rapid.T, label string) *time.Time {
	if rapid.Bool().Draw(t, label+" nil") {
		return nil
	}
	tm := drawTime(t, label)
	return &tm
}

func drawStrings(t *rapid.T, label string) []string {
	switch rapid.IntRange(0, 3).Draw(t, label+" kind") {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	return rapid.SliceOfN(canonjsontest.String(), 1, 4).Draw(t, label)
}

// TestRowEncodingIsMarshal: appendStepView and appendSummary write
// json.Marshal's bytes for every step view and summary, and fail where it
// fails.
func TestRowEncodingIsMarshal(t *testing.T) {
	// A field added to either must be written by the fast encoders too.
	if n := reflect.TypeFor[core.StepView]().NumField(); n != 19 {
		t.Fatalf("StepView (roles/orchestrator/core/view.go) has %d fields; appendStepViewFast (roles/orchestrator/runindex/encode.go) knows 19: write the new one there, or hand a row that has it to json.Marshal, and count it here", n)
	}
	if n := reflect.TypeFor[core.RunSummary]().NumField(); n != 12 {
		t.Fatalf("RunSummary (roles/orchestrator/core/view.go) has %d fields; appendSummaryFast (roles/orchestrator/runindex/encode.go) knows 12: write the new one there, or hand a row that has it to json.Marshal, and count it here", n)
	}
	fastSteps, fastSums := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		str := canonjsontest.String()
		v := core.StepView{
			ID: str.Draw(t, "id"), Title: str.Draw(t, "title"), Subgoal: str.Draw(t, "subgoal"),
			Kind: event.StepKind(str.Draw(t, "kind")), Status: str.Draw(t, "status"),
			Attempt: rapid.IntRange(-1, 1<<40).Draw(t, "attempt"), Node: str.Draw(t, "node"),
			DependsOn: drawStrings(t, "depends_on"), Error: str.Draw(t, "error"),
			StartedAt: drawTimePtr(t, "started"), FinishedAt: drawTimePtr(t, "finished"),
			Code: str.Draw(t, "code"), Reassigned: rapid.IntRange(-1, 3).Draw(t, "reassigned"), Wait: str.Draw(t, "wait"),
			Approvers: drawStrings(t, "approvers"),
		}
		if rapid.Bool().Draw(t, "has exit code") {
			v.ExitCode = new(rapid.IntRange(-255, 255).Draw(t, "exit code"))
		}
		switch rapid.IntRange(0, 6).Draw(t, "extra") {
		case 0:
			v.Edits = []core.Edit{{From: "a", To: "b", By: "op", At: drawTime(t, "edit at")}}
		case 1:
			v.Evidence = []core.StepEvidence{{Hypothesis: "h1", Evidence: "supports"}}
		case 2:
			v.Critique = &core.Verdict{Verdict: "pass", Judgement: str.Draw(t, "judgement")}
		case 3:
			v.Edits, v.Evidence = []core.Edit{}, []core.StepEvidence{}
		}
		got, err := appendStepView([]byte("prefix"), &v)
		if canonjsontest.SameAsMarshal(t, &v, got, err) {
			if _, ok := appendStepViewFast(nil, &v); ok {
				fastSteps++
			}
		}

		s := core.RunSummary{
			ID: str.Draw(t, "run id"), Goal: str.Draw(t, "goal"), Status: event.RunStatus(str.Draw(t, "run status")),
			Reason: str.Draw(t, "reason"), Revision: rapid.IntRange(-1, 9).Draw(t, "revision"), Steps: rapid.IntRange(0, 5000).Draw(t, "steps"),
			CreatedAt: drawTime(t, "created"), FinishedAt: drawTimePtr(t, "run finished"), Code: str.Draw(t, "run code"),
		}
		if !rapid.Bool().Draw(t, "nil counts") {
			s.StepCounts = rapid.MapOfN(str, rapid.IntRange(-1, 5000), 0, 20).Draw(t, "counts")
		}
		got, err = appendSummary([]byte("prefix"), &s)
		if canonjsontest.SameAsMarshal(t, &s, got, err) {
			if _, ok := appendSummaryFast(nil, &s); ok {
				fastSums++
			}
		}
	})
	// Under -short rapid draws too few rows to be sure of both paths.
	if !testing.Short() && (fastSteps == 0 || fastSums == 0) {
		t.Fatalf("fast paths taken: %d step views, %d summaries", fastSteps, fastSums)
	}
}
