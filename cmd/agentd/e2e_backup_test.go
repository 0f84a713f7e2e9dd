package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gatedPlan's step "wait" runs until a file named gate is in the work dir.
const gatedPlan = `goal: gated
steps:
  - id: first
    run: echo first
  - id: wait
    depends_on: [first]
    idempotent: true
    run: while [ ! -f gate ]; do sleep 0.05; done; echo passed
  - id: last
    depends_on: [wait]
    run: echo last
`

// TestBackupRestoreOnNewDataDir: agentctl node backup of a running agentd
// mid-run; the original is then killed; agentd --restore-from on another
// data dir (another machine's, as far as the node can tell: new path, new
// ports) starts ready, finishes the run in flight and a run acknowledged
// just before the backup, keeps the finished one, and its ledger
// verifies.
func TestBackupRestoreOnNewDataDir(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	done := a.submit(testdata("ok.yaml"))
	if v := a.waitRun(done, 60*time.Second); v.Status != "succeeded" {
		t.Fatalf("run %s: %s", done, v.dump())
	}
	gated := a.submit(writePlan(t, gatedPlan))
	waitStep(t, a, gated, "wait", "running", 60*time.Second, func(s stepView) bool { return s.Status == "running" })
	late := a.submit(testdata("ok.yaml"))

	out := filepath.Join(t.TempDir(), "backup")
	res := a.mustCtl("node", "backup", a.name, "--out", out)
	if !strings.Contains(res, "backed up into "+out) || !strings.Contains(res, "stream   AGENTIC_EVENTS") {
		t.Fatalf("node backup printed:\n%s", res)
	}
	a.kill9()

	b := newAgentd(t, "--restore-from", out)
	if err := os.WriteFile(filepath.Join(b.work, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.start()
	b.waitReady()
	for _, id := range []string{done, gated, late} {
		if v := b.waitRun(id, 90*time.Second); v.Status != "succeeded" {
			t.Errorf("run %s on the restored node: %s", id, v.dump())
		}
	}
	b.verifyLedger()
}
