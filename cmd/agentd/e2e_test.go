package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
)

// testdata returns the path of a test plan.
func testdata(name string) string {
	return filepath.Join(bin.root, "cmd", "agentd", "testdata", name)
}

// TestDemoPlan runs examples/hello.yaml end to end and checks the
// documented JSON of run list, run show, ledger verify and audit tail.
func TestDemoPlan(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)

	if r := a.ctl("goal", "submit", "-f", filepath.Join(bin.root, "examples", "hello.yaml"), "--wait"); r.code != 0 {
		t.Fatalf("goal submit --wait: want exit 0, got %s", r)
	}

	// run list -o json: an array holding the one run's summary.
	out := a.mustCtl("run", "list", "-o", "json")
	var rawRuns []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &rawRuns); err != nil {
		t.Fatalf("run list -o json is not a JSON array of objects: %v\n%s", err, out)
	}
	var sums []runSummary
	if err := json.Unmarshal([]byte(out), &sums); err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 {
		t.Fatalf("run list: want 1 run, got %d:\n%s", len(sums), out)
	}
	sum := sums[0]
	if sum.Status != "succeeded" || sum.Goal != "Say hello from the cluster" || sum.Revision < 1 || sum.FinishedAt == nil ||
		sum.Steps != 7 || sum.StepCounts["succeeded"]+sum.StepCounts["skipped"] != 7 {
		t.Fatalf("run list: want the hello run succeeded with a revision, a finish time and 7 steps done, got:\n%s", out)
	}
	for _, k := range []string{"id", "goal", "status", "revision", "steps", "step_counts", "created_at", "finished_at"} {
		if _, ok := rawRuns[0][k]; !ok {
			t.Errorf("run summary: field %q missing; has %v", k, keys(rawRuns[0]))
		}
	}
	if _, ok := rawRuns[0]["reason"]; ok {
		t.Errorf("run summary: reason %s present, documented as omitted when empty", rawRuns[0]["reason"])
	}

	// run show -o json: the run object with every step.
	out = a.mustCtl("run", "show", sum.ID, "-o", "json")
	var rawRun map[string]json.RawMessage
	var run runView
	if err := json.Unmarshal([]byte(out), &rawRun); err != nil {
		t.Fatalf("run show -o json: %v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "goal", "status", "revision", "created_at", "finished_at", "steps"} {
		if _, ok := rawRun[k]; !ok {
			t.Errorf("run: field %q missing; has %v", k, keys(rawRun))
		}
	}
	var rawSteps []map[string]json.RawMessage
	if err := json.Unmarshal(rawRun["steps"], &rawSteps); err != nil {
		t.Fatalf("steps: %v", err)
	}
	if len(rawSteps) != 7 || len(run.Steps) != 7 {
		t.Fatalf("want 7 steps, got %d:\n%s", len(rawSteps), run.dump())
	}
	documented := []string{"id", "subgoal", "kind", "status", "attempt", "node", "exit_code", "started_at", "finished_at"}
	for i, raw := range rawSteps {
		for _, k := range documented {
			if _, ok := raw[k]; !ok {
				t.Errorf("step %d (%s): field %q missing; has %v", i, run.Steps[i].ID, k, keys(raw))
			}
		}
	}
	wantSubgoal := map[string]string{
		"workdir": "prepare", "stamp": "prepare",
		"hello": "greet", "sysinfo": "greet", "greeting": "greet", "greeted": "greet",
		"summary": "",
	}
	for id, sub := range wantSubgoal {
		s := run.step(t, id)
		if s.Subgoal != sub {
			t.Errorf("step %s: subgoal %q, want %q", id, s.Subgoal, sub)
		}
		wantKind := "shell"
		if id == "greeted" {
			wantKind = "noop"
		}
		if s.Kind != wantKind {
			t.Errorf("step %s: kind %q, want %q", id, s.Kind, wantKind)
		}
		// greeting is guarded by creates: skipped when an earlier demo
		// left its file in /tmp/agentic-hello.
		if s.Status != "succeeded" && !(id == "greeting" && s.Status == "skipped") {
			t.Errorf("step %s: status %q, want succeeded", id, s.Status)
		}
		if s.Attempt != 1 || s.Node != a.name || s.StartedAt == nil || s.FinishedAt == nil || s.FinishedAt.Before(*s.StartedAt) {
			t.Errorf("step %s: want attempt 1 on %s with start <= finish, got attempt %d node %q started %v finished %v",
				id, a.name, s.Attempt, s.Node, s.StartedAt, s.FinishedAt)
		}
		if s.Status == "succeeded" && (s.ExitCode == nil || *s.ExitCode != 0) {
			t.Errorf("step %s: succeeded with exit_code %v, want 0", id, s.ExitCode)
		}
	}

	// run show with an 8-character prefix.
	shown := a.runShow(run.ID[:8])
	if shown.ID != run.ID || shown.Status != "succeeded" || len(shown.Steps) != 7 {
		t.Fatalf("run show %s: want run %s succeeded with 7 steps, got:\n%s", run.ID[:8], run.ID, shown.dump())
	}

	// ledger verify.
	v := a.verifyLedger()
	if v.Node != a.name {
		t.Errorf("ledger verify: node %q, want %q", v.Node, a.name)
	}

	// audit tail -o jsonl: documented fields, gap-free seq, signed bus events.
	lines := a.audit()
	if len(lines) == 0 {
		t.Fatal("audit tail: no lines")
	}
	finished := map[string]bool{}
	submitted := 0
	for i, l := range lines {
		for _, k := range []string{"seq", "subject", "type", "node", "time", "data", "jws"} {
			if _, ok := l.raw[k]; !ok {
				t.Errorf("audit seq %d (%s): field %q missing; has %v", l.Seq, l.Type, k, keys(l.raw))
			}
		}
		if l.Seq != uint64(i+1) {
			t.Fatalf("audit line %d has seq %d: want 1-based, gap-free", i, l.Seq)
		}
		if l.Type == "" || l.Node == "" || l.Time.IsZero() {
			t.Errorf("audit seq %d: empty type, node or time: %+v", l.Seq, l)
		}
		if strings.HasPrefix(l.Subject, "agentic.ev.") && l.JWS == "" {
			t.Errorf("audit seq %d (%s on %s): bus event without its jws", l.Seq, l.Type, l.Subject)
		}
		if l.JWS != "" && strings.Count(l.JWS, ".") != 2 {
			t.Errorf("audit seq %d: jws %q is not a compact JWS", l.Seq, l.JWS)
		}
		switch l.Type {
		case "goal.submitted":
			submitted++
			if l.Run != run.ID {
				t.Errorf("audit seq %d: goal.submitted for run %q, want %q", l.Seq, l.Run, run.ID)
			}
		case "task.finished":
			if _, ok := l.raw["run"]; !ok || l.Run != run.ID {
				t.Errorf("audit seq %d: task.finished with run %q, want %q", l.Seq, l.Run, run.ID)
			}
			finished[l.task(t).Step] = true
		}
	}
	if submitted != 1 {
		t.Errorf("audit: %d goal.submitted, want 1", submitted)
	}
	for id := range wantSubgoal {
		if !finished[id] {
			t.Errorf("audit: no task.finished for step %s", id)
		}
	}
	if last := lines[len(lines)-1].Seq; v.Events < last {
		t.Errorf("ledger verify counted %d events, audit shows seq up to %d", v.Events, last)
	}
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// interruptStepB submits planFile, waits until its step b runs and has
// written b.pid, kills agentd with SIGKILL and checks that b's processes
// died with it. It returns the run id.
func interruptStepB(t *testing.T, a *agentd, planFile string) string {
	t.Helper()
	id := a.submit(planFile)
	pid := 0
	var last runView
	err := poll.Wait(30*time.Second, func() bool {
		v, err := a.tryRunShow(id)
		if err != nil {
			return false
		}
		last = v
		b, ok := v.lookup("b")
		if !ok || b.Status != "running" {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(a.workFile("b.pid")))
		return err == nil && pid > 0
	})
	if err != nil {
		t.Fatalf("%v waiting for step b running with b.pid written; last view:\n%s", err, last.dump())
	}
	state, pgid, ok := procStat(pid)
	if !ok || state == 'Z' {
		t.Fatalf("step b's shell (pid %d) is not running before the kill (state %q)", pid, state)
	}
	if pgid == syscall.Getpgrp() || pgid <= 1 {
		t.Fatalf("step b (pid %d) runs in process group %d, not a group of its own", pid, pgid)
	}
	if m := groupMembers(t, pgid); len(m) == 0 {
		t.Fatalf("step b's process group %d has no live member before the kill", pgid)
	}
	if got := a.workFile("F"); got != "a\n" {
		t.Fatalf("before the kill F = %q, want %q", got, "a\n")
	}

	// Should the check below fail, do not leave the survivors running.
	t.Cleanup(func() {
		if len(groupMembers(t, pgid)) > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	a.kill9()

	// b sleeps 5s and was killed within moments of writing b.pid: had its
	// processes survived, they would still be there after 2s.
	var left []string
	err = poll.Wait(2*time.Second, func() bool {
		left = groupMembers(t, pgid)
		return !processLive(pid) && len(left) == 0
	})
	if err != nil {
		t.Fatalf("%v waiting for step b's processes to die with the executor: pid %d live %v, group %d members %q",
			err, pid, processLive(pid), pgid, left)
	}
	return id
}

// TestKill9ResumesIdempotentStep is the key guarantee: agentd killed with
// SIGKILL mid-step kills the step's processes with it; restarted on the
// same data, it reports the interrupted attempt and re-runs the idempotent
// step, and steps that had finished do not run again.
func TestKill9ResumesIdempotentStep(t *testing.T) {
	requireE2E(t)
	testKill9Resume(t, "resume-idempotent.yaml")
}

// TestKill9ResumesIdempotentStepWithRetries is the same with a retry
// allowed for the step.
func TestKill9ResumesIdempotentStepWithRetries(t *testing.T) {
	requireE2E(t)
	testKill9Resume(t, "resume-retries.yaml")
}

func testKill9Resume(t *testing.T, plan string) {
	a := startAgentd(t)
	id := interruptStepB(t, a, testdata(plan))
	a.restart()
	v := a.waitRun(id, 30*time.Second)

	// The restarted executor reports the attempt the crash cut short.
	lines := a.audit("--run", id)
	var interrupted bool
	for _, d := range taskFinished(t, lines, id, "b") {
		if d.Attempt == 1 && d.Status == "failed" && strings.HasPrefix(d.Error, "interrupted") {
			interrupted = true
		}
	}
	if !interrupted {
		t.Errorf("audit: no task.finished for b attempt 1 with an error starting \"interrupted\"; b's results: %+v", taskFinished(t, lines, id, "b"))
	}

	if v.Status != "succeeded" {
		t.Fatalf("after the restart the run did not succeed (an interrupted idempotent step must be re-run):\n%s", v.dump())
	}
	if got := a.workFile("F"); got != "a\nc\n" {
		t.Errorf("F = %q, want %q (a must not run again, c must run once)", got, "a\nc\n")
	}
	if b := v.step(t, "b"); b.Attempt != 2 || b.Status != "succeeded" {
		t.Errorf("step b: attempt %d %s, want attempt 2 succeeded", b.Attempt, b.Status)
	}
	if s := v.step(t, "a"); s.Attempt != 1 {
		t.Errorf("step a: attempt %d, want 1", s.Attempt)
	}
	if n := len(taskFinished(t, lines, id, "a")); n != 1 {
		t.Errorf("audit: step a finished %d times, want 1", n)
	}
	a.verifyLedger()
}

// TestKill9NonIdempotentStepNotRerun: a step that is not idempotent and
// was interrupted is not run again; the run fails and its dependents never
// run.
func TestKill9NonIdempotentStepNotRerun(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	id := interruptStepB(t, a, testdata("interrupt-not-idempotent.yaml"))
	a.restart()
	v := a.waitRun(id, 30*time.Second)

	if v.Status != "failed" {
		t.Fatalf("run: want failed, got:\n%s", v.dump())
	}
	b := v.step(t, "b")
	if b.Status != "failed" || b.Attempt != 1 || !strings.Contains(b.Error, "interrupted") || !strings.Contains(b.Error, "not re-run") {
		t.Errorf("step b: want failed at attempt 1 with an error saying it was interrupted and not re-run, got %s attempt %d error %q", b.Status, b.Attempt, b.Error)
	}
	if c := v.step(t, "c"); c.Status == "succeeded" || c.Attempt != 0 {
		t.Errorf("step c: %s attempt %d, want never run (attempt 0)", c.Status, c.Attempt)
	}
	if got := a.workFile("F"); got != "a\n" {
		t.Errorf("F = %q, want %q (c must never run)", got, "a\n")
	}
	lines := a.audit("--run", id)
	for _, l := range lines {
		if l.Type == "task.started" && l.task(t).Step == "b" && l.task(t).Attempt > 1 {
			t.Errorf("audit seq %d: b was started again (attempt %d)", l.Seq, l.task(t).Attempt)
		}
	}
	a.verifyLedger()
}

// TestSIGTERMDrains: SIGTERM lets the running step finish, agentd exits 0
// well within the drain window, and the run completes after a restart.
func TestSIGTERMDrains(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	id := a.submit(testdata("drain.yaml"))
	poll.Eventually(t, 30*time.Second, "step slow running with slow.started written", func() bool {
		v, err := a.tryRunShow(id)
		if err != nil {
			return false
		}
		s, ok := v.lookup("slow")
		return ok && s.Status == "running" && a.workFileExists("slow.started")
	})
	if a.workFileExists("slow.done") {
		t.Fatal("slow finished before SIGTERM: the test did not interrupt it")
	}

	sent := time.Now()
	a.signal(syscall.SIGTERM)
	st := a.wait(45 * time.Second)
	if st == nil {
		t.Fatal("agentd still running 45s after SIGTERM (drain timeout 30s)")
	}
	took := time.Since(sent)
	if st.ExitCode() != 0 {
		t.Fatalf("agentd exited with %v after SIGTERM, want exit 0", st)
	}
	if took > 30*time.Second {
		t.Errorf("agentd took %v to stop, want less than the 30s drain timeout for a 1s step", took)
	}
	if got := a.workFile("slow.done"); got != "done\n" {
		t.Fatalf("slow.done = %q: the running step did not finish while agentd drained", got)
	}

	a.restart()
	v := a.waitRun(id, 30*time.Second)
	if v.Status != "succeeded" {
		t.Fatalf("after the restart: want run succeeded, got:\n%s", v.dump())
	}
	if s := v.step(t, "slow"); s.Status != "succeeded" || s.Attempt != 1 || s.ExitCode == nil || *s.ExitCode != 0 {
		t.Errorf("step slow: want succeeded at attempt 1 with exit 0, got %s attempt %d exit %v error %q", s.Status, s.Attempt, s.ExitCode, s.Error)
	}
	if !a.workFileExists("after.done") {
		t.Error("step after did not run")
	}
	for _, l := range a.audit("--run", id) {
		if l.Type == "task.finished" {
			if d := l.task(t); strings.HasPrefix(d.Error, "interrupted") {
				t.Errorf("audit seq %d: %s attempt %d reported interrupted: %q", l.Seq, d.Step, d.Attempt, d.Error)
			}
		}
	}
	a.verifyLedger()
}

// TestMalformedPlansCreateNothing: a bad plan file is refused locally
// with located errors and nothing reaches the cluster.
func TestMalformedPlansCreateNothing(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	cases := []struct{ file, want string }{
		{"cycle.yaml", "cycle: a -> b -> a"},
		{"unknown-dependency.yaml", `unknown step "nope"`},
		{"unknown-field.yaml", `unknown field "retires"`},
		{"empty.yaml", "empty"},
	}
	for _, c := range cases {
		path := testdata(filepath.Join("bad", c.file))
		r := a.ctl("goal", "submit", "-f", path)
		if r.code != 1 {
			t.Errorf("%s: want exit 1, got %s", c.file, r)
			continue
		}
		located := regexp.MustCompile(`(?m)` + regexp.QuoteMeta(path) + `:\d+:\d+: .*` + regexp.QuoteMeta(c.want))
		if !located.MatchString(r.stderr) {
			t.Errorf("%s: stderr has no located error (%s:LINE:COL: …%s…):\n%s", c.file, path, c.want, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%s: stdout %q, want nothing", c.file, r.stdout)
		}
	}

	if out := strings.TrimSpace(a.mustCtl("run", "list", "-o", "json")); out != "[]" {
		t.Errorf("run list -o json after bad plans: %s, want []", out)
	}
	lines := a.audit()
	if len(lines) == 0 {
		t.Fatal("audit tail shows nothing at all; the check below would prove nothing")
	}
	for _, l := range lines {
		if l.Type == "goal.submitted" {
			t.Errorf("audit seq %d: a bad plan reached the cluster: %s", l.Seq, l.Data)
		}
	}

	// The control: a good plan does show up in both.
	id := a.submit(testdata("ok.yaml"))
	poll.Eventually(t, 20*time.Second, "the good plan's run in run list and its goal.submitted in the audit", func() bool {
		var runs []runSummary
		r := a.ctl("run", "list", "-o", "json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &runs) != nil || len(runs) != 1 || runs[0].ID != id {
			return false
		}
		n := 0
		for _, l := range a.audit() {
			if l.Type == "goal.submitted" {
				n++
			}
		}
		return n == 1
	})
}

// TestAgentdUX checks the daemon's help and its refusals.
func TestAgentdUX(t *testing.T) {
	requireE2E(t)

	t.Run("help", func(t *testing.T) {
		code, out := runAgentd(t, 10*time.Second, "--help")
		if code != 0 {
			t.Fatalf("agentd --help: exit %d, want 0\n%s", code, out)
		}
		for _, want := range []string{"--data", "Examples:", "agentd --data "} {
			if !strings.Contains(out, want) {
				t.Errorf("agentd --help does not mention %q:\n%s", want, out)
			}
		}
	})

	t.Run("bad role", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		code, out := runAgentd(t, 10*time.Second, "--roles", "orchestrator,bogus", "--data", data)
		if code != 2 {
			t.Fatalf("agentd --roles bogus: exit %d, want 2\n%s", code, out)
		}
		if !strings.Contains(out, `"bogus"`) {
			t.Errorf("the error does not name the bad role \"bogus\":\n%s", out)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("a usage error created the data dir %s", data)
		}
	})

	t.Run("unknown config key", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "agentd.yaml")
		if err := os.WriteFile(cfg, []byte("name: n1\nlog:\n  level: info\n  colour: red\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out := runAgentd(t, 10*time.Second, "--config", cfg, "--data", filepath.Join(t.TempDir(), "data"))
		if code != 2 {
			t.Fatalf("agentd with an unknown config key: exit %d, want 2\n%s", code, out)
		}
		if !strings.Contains(out, cfg+":4") || !strings.Contains(out, "colour") {
			t.Errorf("the error does not name %s:4 and the key colour:\n%s", cfg, out)
		}
	})

	t.Run("not loopback needs TLS or --insecure", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		code, out := runAgentd(t, 10*time.Second, "--nats-listen", "0.0.0.0:0", "--data", data)
		if code != 2 {
			t.Fatalf("agentd --nats-listen 0.0.0.0:0: exit %d, want 2\n%s", code, out)
		}
		for _, want := range []string{`nats_listen: "0.0.0.0:0" is not a loopback address`, "--nats-tls-cert", "--insecure"} {
			if !strings.Contains(out, want) {
				t.Errorf("the error does not say %q:\n%s", want, out)
			}
		}
		a := newAgentd(t)
		a.extra = []string{"--nats-listen", "0.0.0.0:" + strconv.Itoa(a.natsPort), "--insecure"}
		a.start()
		a.waitReady()
		want := "INSECURE: NATS clients on 0.0.0.0:" + strconv.Itoa(a.natsPort) + " without TLS (--insecure)"
		if !strings.Contains(a.log(), want) {
			t.Errorf("the banner does not say %q:\n%s", want, a.logTail(20))
		}
	})

	t.Run("NATS port in use", func(t *testing.T) {
		first := startAgentd(t)
		second := newAgentd(t)
		second.natsPort = first.natsPort
		second.start()
		st := second.wait(60 * time.Second)
		if st == nil {
			t.Fatal("a second agentd on a NATS port in use still runs after 60s")
		}
		port := "127.0.0.1:" + strconv.Itoa(first.natsPort)
		if st.ExitCode() != 1 {
			t.Fatalf("second agentd: %v, want exit 1", st)
		}
		var said string
		for _, line := range strings.Split(second.log(), "\n") {
			if strings.HasPrefix(line, "agentd: ") {
				said = line
			}
		}
		if !strings.Contains(said, port) || !strings.Contains(said, "in use") {
			t.Errorf("second agentd: want a last word naming %s as in use, got %q; log:\n%s", port, said, second.logTail(10))
		}
		first.waitReady() // the first is unharmed
		first.verifyLedger()
	})
}

// TestFailureRouting: on_failure continue, retries and abort, through the
// processes.
func TestFailureRouting(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)

	final := func(r ctlResult) runView {
		t.Helper()
		var v runView
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("goal submit --wait -o json: %v\n%s", err, r)
		}
		return v
	}

	t.Run("continue", func(t *testing.T) {
		r := a.ctl("goal", "submit", "-f", testdata("continue.yaml"), "--wait", "-o", "json")
		if r.code != 0 {
			t.Fatalf("want exit 0 (on_failure continue), got %s", r)
		}
		v := final(r)
		if v.Status != "succeeded" {
			t.Fatalf("want run succeeded:\n%s", v.dump())
		}
		if f := v.step(t, "flaky"); f.Status != "failed" || f.ExitCode == nil || *f.ExitCode != 3 {
			t.Errorf("step flaky: want failed with exit_code 3, got %s exit %v", f.Status, f.ExitCode)
		}
		if n := v.step(t, "next"); n.Status != "succeeded" || !a.workFileExists("next.done") {
			t.Errorf("step next: want succeeded and next.done written, got %s", n.Status)
		}
	})

	t.Run("retry", func(t *testing.T) {
		r := a.ctl("goal", "submit", "-f", testdata("retry.yaml"), "--wait", "-o", "json")
		if r.code != 0 {
			t.Fatalf("want exit 0 (the retry succeeds), got %s", r)
		}
		v := final(r)
		if s := v.step(t, "second-time-lucky"); v.Status != "succeeded" || s.Status != "succeeded" || s.Attempt != 2 {
			t.Errorf("want the run and the step succeeded at attempt 2:\n%s", v.dump())
		}
	})

	t.Run("abort", func(t *testing.T) {
		r := a.ctl("goal", "submit", "-f", testdata("abort.yaml"), "--wait", "-o", "json")
		if r.code != 3 {
			t.Fatalf("want exit 3 (run failed), got %s", r)
		}
		v := final(r)
		if v.Status != "failed" || v.Reason == "" {
			t.Errorf("want run failed with a reason:\n%s", v.dump())
		}
		if f := v.step(t, "fail"); f.Status != "failed" || f.ExitCode == nil || *f.ExitCode != 2 {
			t.Errorf("step fail: want failed with exit_code 2, got %s exit %v", f.Status, f.ExitCode)
		}
		if n := v.step(t, "never"); n.Status == "succeeded" || n.Attempt != 0 || a.workFileExists("never.ran") {
			t.Errorf("step never: want never run, got %s attempt %d", n.Status, n.Attempt)
		}
	})
}

// TestRunLogs: a real executor's output reaches the logs stream and
// `agentctl run logs` prints it, per step and for the whole run.
func TestRunLogs(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	if r := a.ctl("goal", "submit", "-f", filepath.Join(bin.root, "examples", "hello.yaml"), "--wait"); r.code != 0 {
		t.Fatalf("goal submit --wait: want exit 0, got %s", r)
	}
	out := a.mustCtl("run", "list", "-o", "json")
	var runs []runSummary
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("run list: %v\n%s", err, out)
	}
	id := runs[0].ID
	if got := a.mustCtl("run", "logs", id[:8], "hello"); !strings.Contains(got, "hello from agentic") {
		t.Fatalf("run logs hello:\n%s", got)
	}
	all := a.mustCtl("run", "logs", id)
	for _, want := range []string{"hello", "sysinfo", "summary", "the demo wrote"} {
		if !strings.Contains(all, want) {
			t.Errorf("run logs: %q missing from\n%s", want, all)
		}
	}
}

// TestLedgerExport: `agentctl ledger export` writes one JSON line per
// ledger record, with hashes and the signed messages.
func TestLedgerExport(t *testing.T) {
	requireE2E(t)
	a := startAgentd(t)
	if r := a.ctl("goal", "submit", "-f", filepath.Join(bin.root, "examples", "hello.yaml"), "--wait"); r.code != 0 {
		t.Fatalf("goal submit --wait: %s", r)
	}
	v := a.verifyLedger()
	out := a.mustCtl("ledger", "export")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if uint64(len(lines)) < v.Events {
		t.Fatalf("export has %d lines, ledger %d events", len(lines), v.Events)
	}
	jws := 0
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("export line is not JSON: %v\n%s", err, l)
		}
		if h, _ := m["hash"].(string); len(h) != 64 {
			t.Fatalf("export line without a hash: %s", l)
		}
		if _, ok := m["jws"]; ok {
			jws++
		}
	}
	if jws == 0 {
		t.Fatal("no signed message in the export")
	}
}
