package node_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/backup"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// gatedPlan's step "wait" runs until a file named gate exists in the work
// dir.
const gatedPlan = `goal: gated
steps:
  - id: first
    kind: noop
  - id: wait
    depends_on: [first]
    idempotent: true
    run: while [ ! -f gate ]; do sleep 0.05; done; echo passed
  - id: last
    depends_on: [wait]
    run: echo last
`

// A backup taken while a step runs, restored into another data dir and
// started there: the node carries on (the step interrupted by the move runs
// again, the run succeeds), a goal acknowledged by the stream just before
// the backup (not yet folded, perhaps) runs too, the earlier run is there,
// and the ledger verifies.
func TestBackupMidWorkRestoreElsewhere(t *testing.T) {
	dirA := t.TempDir()
	a := nodetest.Start(t, nodetest.Config(dirA))
	done := a.WaitRun(t, a.Submit(t, "mixed.yaml", mixedPlan), 30*time.Second).ID
	gated := a.Submit(t, "gated.yaml", gatedPlan)
	poll.Eventually(t, 30*time.Second, "step wait running", func() bool {
		r, err := a.API.RunsGet(context.Background(), gated)
		if err != nil {
			return false
		}
		for _, s := range r.Steps {
			if s.ID == "wait" && s.Status == "running" {
				return true
			}
		}
		return false
	})
	late := a.Submit(t, "late.yaml", mixedPlan) // acknowledged by the stream

	out := filepath.Join(t.TempDir(), "backup")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := a.API.At("test-node").NodeBackup(ctx, out)
	if err != nil {
		t.Fatalf("node.backup: %v", err)
	}
	if res.LedgerSeq == 0 || len(res.Streams) != 3 || res.Dir != out {
		t.Fatalf("backup result %+v: want a ledger, two streams and the artifact bucket in %s", res, out)
	}
	// The node goes on working after its backup.
	if err := os.WriteFile(filepath.Join(dirA, "work", "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := a.WaitRun(t, gated, 30*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("run on the backed-up node: %s", r.Status)
	}
	a.Stop(t)
	if _, err := backup.ReadManifest(out); err != nil {
		t.Fatal(err)
	}

	dirB := filepath.Join(t.TempDir(), "restored")
	if _, err := backup.Restore(ctx, out, dirB, nil); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if _, err := backup.Restore(ctx, out, dirB, nil); err == nil {
		t.Error("restore into a non-empty data dir succeeded")
	}
	if err := os.MkdirAll(filepath.Join(dirB, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirB, "work", "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := nodetest.Start(t, nodetest.Config(dirB))
	for _, id := range []string{done, gated, late} {
		if r := b.WaitRun(t, id, 60*time.Second); r.Status != event.RunSucceeded {
			t.Errorf("run %s on the restored node: %s (%s)", id, r.Status, r.Reason)
		}
	}
	waitReady(t, b)
	v, err := b.API.LedgerVerify(ctx)
	if err != nil || !v.OK {
		t.Fatalf("verify on the restored node: %+v, %v", v, err)
	}
	if v.Events <= res.LedgerSeq {
		t.Errorf("restored ledger has %d records, no more than the copy's %d: it did not carry on", v.Events, res.LedgerSeq)
	}
}

// A backup refuses a relative path, an existing directory, and a path
// inside the data dir.
func TestBackupRefusesBadOut(t *testing.T) {
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.Config(dir))
	existing := t.TempDir()
	for _, out := range []string{"relative/dir", existing, filepath.Join(dir, "inside")} {
		_, err := n.API.At("test-node").NodeBackup(context.Background(), out)
		if !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("backup into %q = %v, want a bad request", out, err)
		}
	}
}

// artifactPlan's step stores one output.
const artifactPlan = `goal: artifact
steps:
  - id: make
    run: echo kept-in-the-backup > report.md
    outputs: [report.md]
`

// A backup holds the artifact bucket: restored into another data dir, the
// node serves the artifact a run stored before the backup, byte for byte
// and verified against the sha256 its ledger recorded.
func TestBackupKeepsArtifacts(t *testing.T) {
	a := nodetest.Start(t, nodetest.Config(t.TempDir()))
	run := a.Submit(t, "artifact.yaml", artifactPlan)
	if r := a.WaitRun(t, run, 30*time.Second); r.Status != event.RunSucceeded {
		t.Fatalf("run: %s (%s)", r.Status, r.Reason)
	}
	out := filepath.Join(t.TempDir(), "backup")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := a.API.At("test-node").NodeBackup(ctx, out)
	if err != nil {
		t.Fatalf("node.backup: %v", err)
	}
	if !slices.ContainsFunc(res.Streams, func(s api.BackupStream) bool { return s.Name == artifact.BucketStream }) {
		t.Errorf("backup streams %+v: want the artifact bucket's stream %s", res.Streams, artifact.BucketStream)
	}
	// Left out on request, the backup says so.
	lean, err := a.API.At("test-node").NodeBackupWith(ctx, api.BackupRequest{Out: out + "-lean", NoArtifacts: true})
	if err != nil {
		t.Fatalf("node.backup without artifacts: %v", err)
	}
	if slices.ContainsFunc(lean.Streams, func(s api.BackupStream) bool { return s.Name == artifact.BucketStream }) ||
		len(lean.Streams) != 2 || !strings.Contains(lean.ArtifactsOmitted, "--no-artifacts") {
		t.Errorf("backup without artifacts: streams %+v, artifacts omitted %q", lean.Streams, lean.ArtifactsOmitted)
	}
	a.Stop(t)

	dirB := filepath.Join(t.TempDir(), "restored")
	if _, err := backup.Restore(ctx, out, dirB, nil); err != nil {
		t.Fatalf("restore: %v", err)
	}
	b := nodetest.Start(t, nodetest.Config(dirB))
	waitReady(t, b)
	page, err := b.API.ArtifactsList(ctx, api.ArtifactsRequest{Run: run, Name: "report.md"})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("artifacts.list on the restored node: %+v, %v", page, err)
	}
	art := page.Items[0]
	st, err := artifact.Open(ctx, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := st.Get(ctx, art.SHA256, art.Size, art.Object, &got); err != nil {
		t.Fatalf("artifact get on the restored node: %v", err)
	}
	if got.String() != "kept-in-the-backup\n" {
		t.Fatalf("artifact on the restored node: %q", got.String())
	}
}
