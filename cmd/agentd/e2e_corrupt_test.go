package main_test

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// stopAgentd stops a with SIGTERM and waits for it to exit 0.
func stopAgentd(t *testing.T, a *agentd) {
	t.Helper()
	a.signal(syscall.SIGTERM)
	if st := a.wait(60 * time.Second); st == nil || st.ExitCode() != 0 {
		t.Fatalf("agentd did not stop cleanly: %v\n%s", st, a.logTail(20))
	}
}

// waitCorrupt starts a and polls /readyz until it answers 503 CORRUPT
// naming want; agentd must stay up, and a run query must be refused with
// the remedy.
func waitCorrupt(t *testing.T, a *agentd, run, want string) {
	t.Helper()
	a.start()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", a.httpPort)
	var last string
	err := poll.Wait(readyTimeout, func() bool {
		if !a.running() {
			return true
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(last, "CORRUPT")
	})
	if err != nil || !a.running() {
		t.Fatalf("agentd on a damaged ledger: running=%v, last /readyz %q\n%s", a.running(), last, a.logTail(30))
	}
	if !strings.Contains(last, want) || !strings.Contains(last, "--rebuild-ledger") {
		t.Errorf("/readyz = %q, want CORRUPT naming %q and the remedy", last, want)
	}
	r := a.ctl("run", "show", run)
	if r.code == 0 || !strings.Contains(r.stderr, "damaged") || !strings.Contains(r.stderr, "--rebuild-ledger") {
		t.Errorf("run show on a damaged ledger: %s", r)
	}
	if l := a.log(); strings.Contains(l, "goroutine ") || strings.Contains(l, "panic") {
		t.Errorf("agentd log holds a stack trace:\n%s", a.logTail(40))
	}
}

// rebuild starts a once with --rebuild-ledger and checks run and ledger.
func rebuild(t *testing.T, a *agentd, run string) {
	t.Helper()
	a.kill()
	extra := a.extra
	a.extra = append(append([]string(nil), extra...), "--rebuild-ledger")
	a.restart()
	a.extra = extra
	if v := a.waitRun(run, 60*time.Second); v.Status != "succeeded" {
		t.Errorf("run %s after the rebuild: %s", run, v.dump())
	}
	a.verifyLedger()
	matches, _ := filepath.Glob(filepath.Join(a.data, "ledger.damaged-*"))
	if len(matches) == 0 {
		t.Error("the damaged ledger was not kept")
	}
}

// TestDamagedLedgerThenRebuild: a ledger record rewritten behind agentd's
// back, then a flipped byte in a ledger table: each time agentd starts,
// stays up, not ready with CORRUPT and the remedy, refuses run queries, and
// prints no stack trace; agentd --rebuild-ledger brings it back with the
// run intact and a ledger that verifies.
func TestDamagedLedgerThenRebuild(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	run := a.submit(testdata("ok.yaml"))
	if v := a.waitRun(run, 60*time.Second); v.Status != "succeeded" {
		t.Fatalf("run %s: %s", run, v.dump())
	}
	stopAgentd(t, a)
	ledgerDir := filepath.Join(a.data, "ledger")
	ledgertest.RewriteRecord(t, ledgerDir, 2, func(ev *event.Event) { ev.Node = "forged" })
	waitCorrupt(t, a, run, "does not chain")
	rebuild(t, a, run)

	stopAgentd(t, a)
	ledgertest.CorruptTable(t, ledgerDir, 0.05)
	waitCorrupt(t, a, run, "checksum mismatch")
	rebuild(t, a, run)
}
