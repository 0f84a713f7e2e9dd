package node_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/roles/orchestrator/replay"
)

// makePlan stores two outputs, and a later step of the run reads one of
// them through an input of the step (no depends_on written).
const makePlan = `goal: make
family: nightly
steps:
  - id: make
    run: mkdir -p dist && printf 'report of the night\n' > report.md && head -c 200000 /dev/urandom > dist/app.tar.gz
    outputs: [report.md, "dist/*.tar.gz"]
  - id: check
    run: test "$(cat in/report.md)" = "report of the night" && cmp -s in/report.md report.md
    inputs:
      - {step: make, name: report.md, as: in/report.md}
`

// nextPlan reads the report of the latest succeeded run of the family.
const nextPlan = `goal: next
steps:
  - id: read
    run: test "$(cat last.md)" = "report of the night"
    inputs:
      - {family: nightly, name: report.md, as: last.md}
`

// missingPlan reads from a family that has no run.
const missingPlan = `goal: missing
steps:
  - id: read
    run: cat last.md
    inputs:
      - {family: weekly, name: report.md, as: last.md}
`

// TestArtifactsEndToEnd: a step's outputs are stored and listed; a step
// of the run reads one (the input made it depend on its producer), a run
// of another plan reads the family's latest; an input that cannot be
// resolved fails its step with the reason; the get is byte-identical and
// verified; the runs replay with the recorded inputs.
func TestArtifactsEndToEnd(t *testing.T) {
	n := nodetest.Start(t, nodetest.Config(t.TempDir()))
	ctx := context.Background()

	mk := n.WaitRun(t, n.Submit(t, "make.yaml", makePlan), 30*time.Second)
	if mk.Status != event.RunSucceeded {
		t.Fatalf("make run: %s (%s) %+v", mk.Status, mk.Reason, mk.Steps)
	}
	page, err := n.API.ArtifactsList(ctx, api.ArtifactsRequest{Run: mk.ID})
	if err != nil || len(page.Items) != 2 || !page.End {
		t.Fatalf("artifacts.list: %+v, %v", page, err)
	}
	byName := map[string]api.Artifact{}
	for _, a := range page.Items {
		byName[a.Name] = a
	}
	rep := byName["report.md"]
	want := sha256.Sum256([]byte("report of the night\n"))
	if rep.SHA256 != hex.EncodeToString(want[:]) || rep.Size != 20 || rep.Step != "make" || rep.Retention != event.RetentionRun {
		t.Fatalf("report.md = %+v", rep)
	}
	if tar := byName["dist/app.tar.gz"]; tar.Size != 200000 {
		t.Fatalf("dist/app.tar.gz = %+v", tar)
	}
	st, err := artifact.Open(ctx, n.JS)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := st.Get(ctx, rep.SHA256, rep.Size, rep.Object, &b); err != nil || b.String() != "report of the night\n" {
		t.Fatalf("get: %q, %v", b.String(), err)
	}
	assigned := findAssigned(t, n, mk.ID, "check")
	if len(assigned.Inputs) != 1 || assigned.Inputs[0].SHA256 != rep.SHA256 || assigned.Inputs[0].As != "in/report.md" || assigned.ArtifactBytes != 0 {
		t.Fatalf("task.assigned of check: inputs %+v, bytes %d", assigned.Inputs, assigned.ArtifactBytes)
	}
	if !strings.Contains(strings.Join(assigned.Step.DependsOn, ","), "make") {
		t.Fatalf("check's depends_on %q: the input did not add make", assigned.Step.DependsOn)
	}

	next := n.WaitRun(t, n.Submit(t, "next.yaml", nextPlan), 30*time.Second)
	if next.Status != event.RunSucceeded {
		t.Fatalf("next run: %s (%s) %+v", next.Status, next.Reason, next.Steps)
	}
	if in := findAssigned(t, n, next.ID, "read").Inputs; len(in) != 1 || in[0].Run != mk.ID || in[0].SHA256 != rep.SHA256 {
		t.Fatalf("family input resolved to %+v, want run %s's report", in, mk.ID)
	}

	miss := n.WaitRun(t, n.Submit(t, "missing.yaml", missingPlan), 30*time.Second)
	if miss.Status != event.RunFailed || len(miss.Steps) != 1 || !strings.Contains(miss.Steps[0].Error, `plan family "weekly" has no succeeded run`) {
		t.Fatalf("missing run: %s %+v", miss.Status, miss.Steps)
	}
	if _, err := n.API.ArtifactsList(ctx, api.ArtifactsRequest{Run: mk.ID, Name: "nope.md"}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a name the run did not store: %v", err)
	}

	for _, run := range []string{mk.ID, next.ID, miss.ID} {
		rep, err := replay.Check(n.API.Events(ctx, 0, nil), replay.Options{Run: run})
		if err != nil || rep.Diverged() || rep.Reproduced != rep.Checked {
			b, _ := json.MarshalIndent(rep, "", "  ")
			t.Fatalf("replay of %s: %v\n%s", run, err, b)
		}
	}
}
