package memory_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
)

func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"apt-get install -y nginx", []string{"apt-get install -y"}},
		{"apt-get -y install curl && apt-get install nginx", []string{"apt-get install -y", "apt-get install"}},
		{"rm -fr build; rm --recursive --force dist", []string{"rm -f -r"}},
		{"$CMD --flag", nil},
		{"cd /srv && make deploy", []string{"cd", "make"}},
	} {
		if got := memory.Shapes(tc.script); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Shapes(%q) = %q, want %q", tc.script, got, tc.want)
		}
	}
}

// attempt folds the assignment and the result of one shell attempt.
func attempt(m *memory.Memory, seq *uint64, run, step string, n int, script string, status event.TaskStatus, class event.FailureClass) {
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	*seq++
	a := ev(event.TaskAssigned, at, event.TaskAssignedData{Step: event.Step{ID: step, Kind: event.KindShell, Run: script}, Attempt: n, Node: "x"})
	a.Run, a.Seq = run, *seq
	m.Fold(a)
	*seq++
	f := ev(event.TaskFinished, at, event.TaskFinishedData{Step: step, Attempt: n, Node: "x", Status: status, Class: class})
	f.Run, f.Seq = run, *seq
	m.Fold(f)
}

func TestAdaptiveNotes(t *testing.T) {
	m := memory.New()
	var seq uint64
	if notes := m.Notes(10); len(notes) != 0 {
		t.Fatalf("notes of an empty memory: %q", notes)
	}
	for i := range 5 {
		st := event.TaskFailed
		if i == 4 {
			st = event.TaskSucceeded
		}
		attempt(m, &seq, fmt.Sprint("run-", i), "install", 1, "apt-get install nginx", st, event.ClassLogic)
		attempt(m, &seq, fmt.Sprint("run-", i), "install-y", 1, "apt-get install -y nginx", event.TaskSucceeded, "")
		attempt(m, &seq, fmt.Sprint("run-", i), "deploy", 1, "make deploy", event.TaskFailed, event.ClassLogic)
	}
	// Timeouts and lost nodes say nothing about the command.
	attempt(m, &seq, "run-9", "install", 1, "apt-get install nginx", event.TaskFailed, event.ClassTransient)
	want := []string{
		"`make` failed 5 of 5 times",
		"`apt-get install` without -y failed 4 of 5 times; with -y it succeeded 5 of 5",
	}
	if got := m.Notes(10); !reflect.DeepEqual(got, want) {
		t.Fatalf("notes = %q\nwant %q", got, want)
	}
	if got := m.Notes(1); len(got) != 1 {
		t.Fatalf("Notes(1) = %q", got)
	}

	// A snapshot restores the same statistics, and an attempt in flight
	// across it still counts.
	seq++
	a := ev(event.TaskAssigned, time.Now(), event.TaskAssignedData{Step: event.Step{ID: "s", Kind: event.KindShell, Run: "make deploy"}, Attempt: 1})
	a.Run, a.Seq = "run-x", seq
	m.Fold(a)
	_, snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	m2 := memory.New()
	if err := m2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	f := ev(event.TaskFinished, time.Now(), event.TaskFinishedData{Step: "s", Attempt: 1, Status: event.TaskFailed, Class: event.ClassLogic})
	f.Run, f.Seq = "run-x", seq+1
	m.Fold(f)
	m2.Fold(f)
	c1, _ := m.Commands(0)
	c2, _ := m2.Commands(0)
	if !reflect.DeepEqual(c1, c2) || c1[0] != (memory.CommandStat{Shape: "make", Failures: 6}) {
		t.Fatalf("after restore %+v, folded %+v", c2, c1)
	}
}

func TestShapesAreBounded(t *testing.T) {
	m := memory.New()
	var seq uint64
	for i := range memory.MaxShapes + 5 {
		attempt(m, &seq, "run", fmt.Sprint("s", i), 1, fmt.Sprintf("tool%d", i), event.TaskSucceeded, "")
	}
	all, overflow := m.Commands(0)
	if len(all) != memory.MaxShapes || overflow != 5 {
		t.Fatalf("%d shapes, overflow %d", len(all), overflow)
	}
	if top, _ := m.Commands(3); len(top) != 3 {
		t.Fatalf("Commands(3) = %d", len(top))
	}
}
