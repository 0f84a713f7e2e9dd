package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyHistoryRunsAgentd: `agentctl keys verify-history`, which does
// not link the ledger, verifies an export through the agentd binary next
// to it (agentd verify-history): ok with the cluster's root.pub, FAILED
// (exit 1) for an export whose chain was altered, and a clear error when
// no agentd is found.
func TestVerifyHistoryRunsAgentd(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	if r := a.ctl("goal", "submit", "-f", filepath.Join(bin.root, "examples", "hello.yaml"), "--wait"); r.code != 0 {
		t.Fatalf("goal submit --wait: %s", r)
	}
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	out := a.mustCtl("ledger", "export")
	if err := os.WriteFile(export, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	rootPub := filepath.Join(a.data, "root.pub")
	if r := a.ctl("keys", "verify-history", export, "--genesis", rootPub); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(r.stdout, "genesis") {
		t.Fatalf("verify-history of the export: %s", r)
	}
	// The last record's hash altered: the chain breaks there.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	i := strings.Index(last, `"hash":"`) + len(`"hash":"`)
	flip := map[byte]byte{'0': '1'}[last[i]]
	if flip == 0 {
		flip = '0'
	}
	lines[len(lines)-1] = last[:i] + string(flip) + last[i+1:]
	bad := filepath.Join(t.TempDir(), "altered.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := a.ctl("keys", "verify-history", bad, "--genesis", rootPub); r.code != 1 || (!strings.Contains(r.stdout, "FAILED") && !strings.Contains(r.stderr, "verify-history")) {
		t.Fatalf("verify-history of an altered export: %s", r)
	}
	// An agentd that is not there: said, with the way out.
	cmd := exec.Command(bin.agentctl, "keys", "verify-history", export, "--genesis", rootPub)
	cmd.Env = append(hermeticEnv(), "AGENTIC_AGENTD="+filepath.Join(t.TempDir(), "no-agentd"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "no-agentd") {
		t.Fatalf("verify-history without agentd: %v\n%s", err, stderr.Bytes())
	}
}
