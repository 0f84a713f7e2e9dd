package main_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/nats-io/nats.go/jetstream"
)

// bigPlan's step writes 400 MB and declares it an output: its store
// takes seconds, long enough to be killed during.
const bigPlan = `goal: big
steps:
  - id: big
    run: head -c 400000000 /dev/zero > big.bin
    idempotent: false
    outputs: [big.bin]
`

// smallPlan stores a report.
const smallPlan = `goal: small
steps:
  - id: report
    run: printf 'all good\n' > report.md
    outputs: [report.md]
`

// TestArtifactKilledDuringStore: agentd killed with SIGKILL while it
// stores a step's output leaves chunks no metadata names and no
// artifact.stored; after the restart nothing lists it. Then a small
// artifact goes round trip through agentctl artifact ls and get,
// byte-identical.
func TestArtifactKilledDuringStore(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	plan := filepath.Join(a.dir, "big.yaml")
	if err := os.WriteFile(plan, []byte(bigPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	run := a.submit(plan)

	nc, err := a.natsConn()
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	chunks := func() uint64 {
		s, err := js.Stream(ctx, artifact.BucketStream)
		if err != nil {
			return 0
		}
		return s.CachedInfo().State.Msgs
	}
	// Kill while the chunks arrive: a few hundred of the ~3,000.
	if err := poll.Wait(60*time.Second, func() bool { return chunks() >= 200 }); err != nil {
		t.Fatalf("the store never began: %d messages in the bucket", chunks())
	}
	stored := chunks()
	nc.Close()
	a.kill9()
	if stored >= 400000000/artifact.ChunkSize {
		t.Fatalf("the store was complete (%d messages) before the kill", stored)
	}

	a.restart()
	// The interrupted attempt is reported, and the step, not idempotent,
	// is not run again; nothing was recorded of its output.
	if err := poll.Wait(60*time.Second, func() bool {
		v, err := a.tryRunShow(run)
		return err == nil && len(v.Steps) == 1 && (v.Steps[0].Status == "needs-decision" || v.done())
	}); err != nil {
		t.Fatalf("the interrupted step was not settled: %s", a.runShow(run).dump())
	}
	for _, l := range a.audit("--run", run) {
		if l.Type == "artifact.stored" {
			t.Fatalf("an artifact.stored of a store killed midway: %s", l.Data)
		}
	}
	if r := a.ctl("artifact", "ls", "--run", run, "-o", "json"); r.code == 0 && strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("artifact ls lists a killed store: %s", r)
	}
	nc, err = a.natsConn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ = jetstream.New(nc)
	s, err := js.Stream(ctx, artifact.BucketStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("$O."+artifact.Bucket+".M.>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 0 || info.State.Msgs == 0 {
		t.Fatalf("after the kill the bucket holds %d messages and metadata %v: want orphan chunks and no metadata", info.State.Msgs, info.State.Subjects)
	}

	// A small artifact through agentctl, byte-identical and verified.
	plan = filepath.Join(a.dir, "small.yaml")
	if err := os.WriteFile(plan, []byte(smallPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	small := a.submit(plan)
	if v := a.waitRun(small, 60*time.Second); v.Status != "succeeded" {
		t.Fatalf("small run: %s", v.dump())
	}
	var list []struct {
		Name, SHA256, Step, Retention string
		Size                          int64
	}
	if err := json.Unmarshal([]byte(a.mustCtl("artifact", "ls", "--run", small, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("all good\n"))
	if len(list) != 1 || list[0].Name != "report.md" || list[0].SHA256 != hex.EncodeToString(sum[:]) || list[0].Size != 9 || list[0].Retention != "run" {
		t.Fatalf("artifact ls: %+v", list)
	}
	if out := a.mustCtl("artifact", "get", small, "report.md"); out != "all good\n" {
		t.Fatalf("artifact get: %q", out)
	}
	dst := filepath.Join(a.dir, "report.md")
	a.mustCtl("artifact", "get", small, "report.md", "--out", dst)
	if b, err := os.ReadFile(dst); err != nil || string(b) != "all good\n" {
		t.Fatalf("artifact get --out: %q, %v", b, err)
	}
	if r := a.ctl("artifact", "get", small, "nope.md", "--out", filepath.Join(a.dir, "nope")); r.code == 0 || !strings.Contains(r.stderr, "nope.md") {
		t.Fatalf("artifact get of a name not stored: %s", r)
	}
}
