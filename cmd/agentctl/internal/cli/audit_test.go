package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
)

func auditLine(seq uint64, typ event.Type, run string, data any) api.AuditLine {
	raw, _ := json.Marshal(data)
	return api.AuditLine{Seq: seq, Subject: event.Subject(typ, ""), Type: string(typ), Run: run, Node: "node-a",
		Time: time.Now().Add(time.Duration(seq) * time.Millisecond), Data: json.RawMessage(raw), JWS: "eyJ.sig." + string(rune('a'+seq))}
}

func fixtureAudit() []api.AuditLine {
	return []api.AuditLine{
		auditLine(1, event.GoalSubmitted, runA, event.GoalSubmittedData{Goal: "Say hello", PlanName: "hello.yaml"}),
		auditLine(2, event.PlanProposed, runA, event.PlanProposedData{Revision: 1, Source: "file", Plan: event.Plan{Steps: []event.Step{{ID: "x"}, {ID: "y"}}}}),
		auditLine(3, event.TaskFinished, runA, event.TaskFinishedData{Step: "hello", Attempt: 1, Status: "failed", ExitCode: 2, Duration: event.Duration(1500 * time.Millisecond), Error: "exit status 2"}),
		auditLine(4, event.MemoryWritten, "", event.MemoryWrittenData{Scope: "shared", Key: "k", Value: "v"}),
		auditLine(5, "future.thing", runB, map[string]any{"x": 1}),
	}
}

func TestAuditTail(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.appendAudit(fixtureAudit()...)

	r := h.run("audit", "tail")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 5 {
		t.Fatalf("audit tail = %+v", r)
	}
	for i, want := range []string{
		"goal.submitted   " + runA + "  node-a        Say hello (plan hello.yaml)",
		"plan.proposed", "revision 1 from file, 2 steps",
		"hello attempt 1 failed (exit 2, 1.5s): exit status 2",
		"shared/k = v",
		`{"x":1}`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("audit text lacks %q (line %d):\n%s", want, i, r.stdout)
		}
	}
	if !strings.HasPrefix(r.stdout, "     1  ") {
		t.Errorf("first column is not the seq: %q", lines[0])
	}

	r = h.run("audit", "tail", "--run", runA, "-o", "json")
	got := decodeJSON[[]api.AuditLine](t, r.stdout)
	if r.code != 0 || len(got) != 3 || got[2].Seq != 3 || got[0].JWS != "eyJ.sig.b" {
		t.Fatalf("audit -o json = %+v", r)
	}
	for _, key := range []string{`"seq"`, `"subject"`, `"type"`, `"run"`, `"node"`, `"time"`, `"data"`, `"jws"`} {
		if !strings.Contains(r.stdout, key) {
			t.Errorf("audit JSON lacks %s", key)
		}
	}

	r = h.run("audit", "tail", "-o", "jsonl")
	jl := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(jl) != 5 {
		t.Fatalf("audit -o jsonl = %+v", r)
	}
	// The payload passes through byte for byte.
	if !strings.Contains(jl[4], `"data":{"x":1}`) {
		t.Errorf("jsonl line = %s", jl[4])
	}

	r = h.run("audit", "tail", "--type", "task.finished,plan.proposed", "-o", "json")
	if got := decodeJSON[[]api.AuditLine](t, r.stdout); r.code != 0 || len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 {
		t.Errorf("--type task.finished,plan.proposed = %+v", r)
	}
	r = h.run("audit", "tail", "--type", "task.finish")
	if r.code != 2 || !strings.Contains(r.stderr, `"task.finish" is not an event type`) {
		t.Errorf("--type task.finish = %+v", r)
	}

	r = h.run("audit", "tail", "--since", "1h", "-o", "json")
	if got := decodeJSON[[]api.AuditLine](t, r.stdout); len(got) != 5 {
		t.Errorf("--since 1h gave %d lines", len(got))
	}
}

func TestAuditTailPages(t *testing.T) {
	h := newHarness(t).withNode()
	var lines []api.AuditLine
	for i := range auditPage + 5 {
		lines = append(lines, auditLine(uint64(i+1), event.RunCancel, runA, event.RunCancelData{}))
	}
	h.node.appendAudit(lines...)
	r := h.run("audit", "tail", "-o", "jsonl")
	if n := strings.Count(r.stdout, "\n"); r.code != 0 || n != auditPage+5 {
		t.Fatalf("paged tail printed %d lines, exit %d", n, r.code)
	}
}

func TestAuditFollow(t *testing.T) {
	h := newHarness(t).withNode()
	h.node.appendAudit(fixtureAudit()[:2]...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := new(syncBuffer)
	done := make(chan result, 1)
	go func() { done <- h.runCtx(ctx, out, "audit", "tail", "--follow", "-o", "json") }()

	poll.Eventually(t, 10*time.Second, "the committed lines", func() bool { return strings.Count(out.String(), "\n") == 2 })
	h.node.appendAudit(fixtureAudit()[2:4]...)
	poll.Eventually(t, 10*time.Second, "the lines committed while following", func() bool { return strings.Count(out.String(), "\n") == 4 })
	cancel() // Ctrl-C
	r := <-done
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("follow ended with %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, l := range lines { // json while following is one object per line
		if got := decodeJSON[api.AuditLine](t, l); got.Seq != uint64(i+1) {
			t.Errorf("line %d has seq %d", i, got.Seq)
		}
	}
}

// A follow whose requests keep failing says so on stderr, goes on asking,
// and says when answers come back.
func TestAuditFollowSaysWhenRequestsFail(t *testing.T) {
	defer func(d time.Duration) { followPause = d }(followPause)
	followPause = 5 * time.Millisecond
	h := newHarness(t).withNode()
	h.node.appendAudit(fixtureAudit()[:1]...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := new(syncBuffer)
	done := make(chan result, 1)
	go func() { done <- h.runCtx(ctx, out, "audit", "tail", "--follow", "-o", "jsonl") }()
	poll.Eventually(t, 10*time.Second, "the committed line", func() bool { return strings.Count(out.String(), "\n") == 1 })
	h.node.with(func(f *fakeNode) { f.busy = followWarnAfter + 2 })
	h.node.appendAudit(fixtureAudit()[1:3]...) // wakes the waiting request; the next ones fail
	poll.Eventually(t, 10*time.Second, "the lines after the failures", func() bool {
		h.node.mu.Lock()
		defer h.node.mu.Unlock()
		return h.node.busy == 0 && strings.Count(out.String(), "\n") == 3
	})
	h.node.appendAudit(fixtureAudit()[3:4]...)
	poll.Eventually(t, 10*time.Second, "the line after the failures", func() bool { return strings.Count(out.String(), "\n") == 4 })
	cancel()
	r := <-done
	if r.code != 0 {
		t.Fatalf("follow ended with %+v", r)
	}
	if !strings.Contains(r.stderr, "audit: 3 requests in a row failed (last: api: node busy)") || !strings.Contains(r.stderr, "answers again") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

func TestLedgerVerify(t *testing.T) {
	h := newHarness(t).withNode()
	r := h.run("ledger", "verify")
	if r.code != 0 || r.stdout != "ok: 3 events, head 9f86d081 (node node-a)\n" {
		t.Fatalf("verify ok = %+v", r)
	}
	r = h.run("ledger", "verify", "-o", "json")
	if got := decodeJSON[map[string]any](t, r.stdout); r.code != 0 || got["ok"] != true || got["events"] != 3.0 || got["head"] != "9f86d081" {
		t.Fatalf("verify json = %+v", r)
	} else if _, ok := got["first_bad_seq"]; ok {
		t.Errorf("first_bad_seq present on success: %s", r.stdout)
	}

	h.node.with(func(f *fakeNode) {
		f.verify = api.VerifyResult{OK: false, Events: 10, Head: "", FirstBadSeq: 7, Error: "hash mismatch at seq 7"}
	})
	r = h.run("ledger", "verify")
	if r.code != ExitError || !strings.Contains(r.stdout, "FAILED: first bad seq 7 of 10 events: hash mismatch at seq 7") || r.stderr != "" {
		t.Fatalf("verify failed = %+v", r)
	}
	r = h.run("ledger", "verify", "-o", "json")
	if got := decodeJSON[map[string]any](t, r.stdout); r.code != ExitError || got["ok"] != false || got["first_bad_seq"] != 7.0 {
		t.Fatalf("verify failed json = %+v", r)
	}
}
