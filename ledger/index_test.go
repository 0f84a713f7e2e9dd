package ledger_test

import (
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

func TestIndexes(t *testing.T) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	// Runs whose names prefix each other must not leak into each other's scans.
	runs := []string{"a", "a/b", "a/", "b"}
	var msgs []ledger.Message
	for i, run := range []string{"a", "a/b", "a", "a/", "b", "a"} {
		msgs = append(msgs, kit.Message(uint64(i+1), kit.Node, started(run, 1)...))
	}
	msgs = append(msgs, kit.Message(7, kit.Operator, event.MustDraft(event.GoalSubmitted, "b", event.GoalSubmittedData{Goal: "g"})))
	msgs = append(msgs, kit.Message(8, kit.Node, event.MustDraft(event.ExecutorOnline, "", event.ExecutorOnlineData{Slots: 2})))
	mustAppend(t, st, msgs...)

	want := map[string][]uint64{"a": {1, 3, 6}, "a/b": {2}, "a/": {4}, "b": {5, 7}}
	for _, run := range runs {
		got := collect(t, st.ScanRun(run, 1))
		if !equal(seqs(got), want[run]) {
			t.Errorf("ScanRun(%q) = %v, want %v", run, seqs(got), want[run])
		}
		for _, r := range got {
			if r.Event.Run != run || r.Raw == nil {
				t.Errorf("ScanRun(%q) yielded %+v", run, r.Event)
			}
		}
	}
	if got := seqs(collect(t, st.ScanRun("a", 2))); !equal(got, []uint64{3, 6}) {
		t.Errorf("ScanRun(a, 2) = %v", got)
	}
	if got := collect(t, st.ScanRun("", 1)); len(got) != 0 {
		t.Errorf("ScanRun(\"\") = %v: events without a run are not indexed by run", seqs(got))
	}
	if got := collect(t, st.ScanRun("zz", 1)); len(got) != 0 {
		t.Errorf("ScanRun(zz) = %v", seqs(got))
	}

	if got := seqs(collect(t, st.ScanType(event.TaskStarted, 1))); !equal(got, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("ScanType(task.started) = %v", got)
	}
	if got := seqs(collect(t, st.ScanType(event.TaskStarted, 5))); !equal(got, []uint64{5, 6}) {
		t.Errorf("ScanType(task.started, 5) = %v", got)
	}
	if got := seqs(collect(t, st.ScanType(event.GoalSubmitted, 1))); !equal(got, []uint64{7}) {
		t.Errorf("ScanType(goal.submitted) = %v", got)
	}
	if got := seqs(collect(t, st.ScanType(event.ExecutorOnline, 1))); !equal(got, []uint64{8}) {
		t.Errorf("ScanType(executor.online) = %v", got)
	}
	// "task.s" is a prefix of "task.started" but a different type.
	if got := collect(t, st.ScanType("task.s", 1)); len(got) != 0 {
		t.Errorf("ScanType(task.s) = %v", seqs(got))
	}
	// Early break.
	n := 0
	for range st.ScanType(event.TaskStarted, 1) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("break from ScanType: %d", n)
	}
}
