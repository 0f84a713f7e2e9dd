package main_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/internal/diskspace/tmpfs"
)

// smallDisk is the size of the data dir's file system in these tests.
const smallDisk = 64 << 20

// belowFloor is what the tests leave free: under the default floor of a
// 64 MiB disk (5 %, 3.2 MiB), above what the node's writes need.
const belowFloor = 1 << 20

// newAgentdOnTmpfs prepares an agentd whose data dir is on a tmpfs of
// smallDisk bytes; it returns the agentd and the tmpfs's mount point.
func newAgentdOnTmpfs(t *testing.T) (*agentd, string) {
	t.Helper()
	mnt := tmpfs.Mount(t, smallDisk)
	a := newAgentd(t)
	a.data = filepath.Join(mnt, "data")
	return a, mnt
}

// readyz returns /readyz's status code and body (0 when it cannot be
// reached).
func (a *agentd) readyz() (int, string) {
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", a.httpPort))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	return resp.StatusCode, strings.TrimSpace(body.String())
}

// waitNotReadyForDisk waits until /readyz answers 503 naming the data
// dir below its floor.
func (a *agentd) waitNotReadyForDisk(within time.Duration) {
	a.t.Helper()
	var code int
	var body string
	err := poll.Wait(within, func() bool {
		code, body = a.readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "not ready: disk: NOSPACE: data dir "+a.data) && strings.Contains(body, "below the floor")
	})
	if err != nil {
		a.t.Fatalf("%v waiting for /readyz to say the disk is below its floor; last answer %d %q", err, code, body)
	}
	if !a.running() {
		a.t.Fatalf("agentd exited on a full disk: %v", a.state)
	}
}

// A node whose data dir is a 64 MB file system starts and runs the demo
// plan.
func TestSmallDataDirRunsDemo(t *testing.T) {
	requireE2E(t)
	a, _ := newAgentdOnTmpfs(t)
	a.start()
	a.waitReady()
	if r := a.ctl("goal", "submit", "-f", filepath.Join(bin.root, "examples", "hello.yaml"), "--wait"); r.code != 0 {
		t.Fatalf("goal submit --wait on a 64 MB data dir: want exit 0, got %s", r)
	}
	a.verifyLedger()
	// Streams made smaller to fit the store are what the settings ask,
	// not drift: no alarm.
	if out := a.mustCtl("alarm", "ls"); strings.Contains(out, "STREAM_DRIFT") {
		t.Errorf("a 64 MB data dir raised a stream drift alarm:\n%s", out)
	}
}

// The data dir fills while a step runs: the node says why it is not ready
// within seconds, starts nothing new, and once space returns it is ready
// again without a restart, the run finishes, every step ran once and the
// ledger verifies.
func TestDiskFullDuringRun(t *testing.T) {
	requireE2E(t)
	a, mnt := newAgentdOnTmpfs(t)
	a.start()
	a.waitReady()
	id := a.submit(testdata("disk-full.yaml"))
	poll.Eventually(t, 30*time.Second, "step a to start", func() bool { return a.workFileExists("a.started") })

	tmpfs.Fill(t, mnt, belowFloor)
	a.waitNotReadyForDisk(10 * time.Second)
	// Step a finishes while the disk is full: its result waits.
	if err := os.WriteFile(filepath.Join(a.work, "a.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "step a to finish", func() bool { return strings.Contains(a.workFile("F"), "a-done") })
	// Nothing new starts below the floor: b stays unstarted for as long as
	// the run would take to reach it otherwise (well under a second).
	if poll.Wait(3*time.Second, func() bool { return strings.Contains(a.workFile("F"), "b") }) == nil {
		t.Fatalf("step b ran below the floor: F = %q", a.workFile("F"))
	}
	if v := a.runShow(id); v.done() || v.step(t, "b").Attempt != 0 {
		t.Fatalf("below the floor the run went on:\n%s", v.dump())
	}
	if code, body := a.readyz(); code != http.StatusServiceUnavailable {
		t.Fatalf("ready again while the disk is still full: %d %q", code, body)
	}

	if err := os.Remove(filepath.Join(mnt, tmpfs.FillName)); err != nil {
		t.Fatal(err)
	}
	a.waitReady()
	v := a.waitRun(id, 30*time.Second)
	if v.Status != "succeeded" {
		t.Fatalf("run after space returned:\n%s", v.dump())
	}
	if got := a.workFile("F"); got != "a\na-done\nb\n" {
		t.Errorf("F = %q, want every step run once", got)
	}
	lines := a.audit("--run", id)
	for _, step := range []string{"a", "b"} {
		if n := len(taskFinished(t, lines, id, step)); n != 1 {
			t.Errorf("step %s finished %d times, want 1", step, n)
		}
	}
	if !a.running() {
		t.Fatal("agentd restarted or exited")
	}
	a.verifyLedger()
}

// A node stopped on a full disk starts again read-only: it serves queries
// and says why it is not ready; once space returns it is ready and takes
// work, without a restart.
func TestStartOnFullDisk(t *testing.T) {
	requireE2E(t)
	a, mnt := newAgentdOnTmpfs(t)
	a.start()
	a.waitReady()
	first := a.submit(testdata("ok.yaml"))
	a.waitRun(first, 30*time.Second)
	tmpfs.Fill(t, mnt, belowFloor)
	a.signal(syscall.SIGTERM)
	if st := a.wait(30 * time.Second); st == nil || !st.Success() {
		t.Fatalf("agentd did not exit 0 on SIGTERM with a full disk: %v\n%s", st, a.logTail(20))
	}

	a.start()
	a.waitNotReadyForDisk(30 * time.Second)
	if out := a.mustCtl("run", "list"); !strings.Contains(out, first) {
		t.Fatalf("run list on a read-only node does not show run %s:\n%s", first, out)
	}

	if err := os.Remove(filepath.Join(mnt, tmpfs.FillName)); err != nil {
		t.Fatal(err)
	}
	a.waitReady()
	second := a.submit(testdata("ok.yaml"))
	if v := a.waitRun(second, 30*time.Second); v.Status != "succeeded" {
		t.Fatalf("run after space returned:\n%s", v.dump())
	}
	a.verifyLedger()
}

// A disk filled to the last byte under an idle node: the leader's lease
// writes fail in JetStream, which nats-server then keeps failed; once
// space returns the node restarts JetStream in-process and takes work
// again, without a restart of the process.
func TestDiskFilledUpAndFreed(t *testing.T) {
	requireE2E(t)
	a, mnt := newAgentdOnTmpfs(t)
	a.start()
	a.waitReady()
	tmpfs.Fill(t, mnt, 0)
	a.waitNotReadyForDisk(10 * time.Second)
	poll.Eventually(t, 10*time.Second, "JetStream to fail a write", func() bool {
		return strings.Contains(a.log(), "JetStream stopped writing")
	})
	if err := os.Remove(filepath.Join(mnt, tmpfs.FillName)); err != nil {
		t.Fatal(err)
	}
	a.waitReady()
	if !strings.Contains(a.log(), "JetStream restarted after a full disk") {
		t.Error("ready again, but the log does not say JetStream was restarted")
	}
	id := a.submit(testdata("ok.yaml"))
	if v := a.waitRun(id, 30*time.Second); v.Status != "succeeded" {
		t.Fatalf("run after space returned:\n%s", v.dump())
	}
	if !a.running() {
		t.Fatal("agentd exited")
	}
	a.verifyLedger()
}
