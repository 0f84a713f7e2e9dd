package executor

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
)

// While the executor holds attempts waiting for a slot, results wait for
// company: finishedGroup of them go out in one Emit (one signed message,
// one leader decision) and are recorded finished together. With nothing
// waiting for a slot, a result goes out at once: the leader's next
// decision may be what a free slot waits for.
func TestResultsGroupedWhileBusy(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := localstate.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := finishedGroup
	attempts := make([]localstate.Attempt, n+1)
	for i := range attempts {
		attempts[i] = localstate.Attempt{Run: "r1", Step: fmt.Sprintf("s%02d", i), Attempt: 1, State: localstate.StateStarted, Started: time.Now().UTC()}
	}
	if err := st.MarkStarted(attempts...); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var emits []int // task.finished per Emit
	em := &countingEmitter{rec: &recorder{}, count: func(drafts []event.Draft) {
		fins := 0
		for _, d := range drafts {
			if d.Type == event.TaskFinished {
				fins++
			}
		}
		mu.Lock()
		emits = append(emits, fins)
		mu.Unlock()
	}}
	emitted := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), emits...)
	}
	var busy atomic.Bool
	busy.Store(true)
	r := newReporter(em, st, log, func(error) bool { return false }, busy.Load)
	defer r.stop()
	r.mu.Lock()
	r.linger = time.Hour // only a full group, or an idle executor, flushes
	r.mu.Unlock()
	finished := func(i int) error {
		a := attempts[i]
		return r.finished(event.MustDraft(event.TaskFinished, a.Run, event.TaskFinishedData{
			Step: a.Step, Attempt: a.Attempt, Status: event.TaskSucceeded,
		}), a)
	}

	errs := make(chan error, n)
	for i := range n - 1 {
		go func() { errs <- finished(i) }()
	}
	poll.Eventually(t, 10*time.Second, "results queued", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.mu.finishes == n-1
	})
	if got := emitted(); len(got) != 0 {
		t.Fatalf("Emits %v while the executor is busy and the group is not full, want none", got)
	}
	go func() { errs <- finished(n - 1) }()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := emitted(); len(got) != 1 || got[0] != n {
		t.Fatalf("results per Emit %v, want one Emit of %d", got, n)
	}

	busy.Store(false)
	if err := finished(n); err != nil { // returns once emitted and recorded
		t.Fatal(err)
	}
	if got := emitted(); len(got) != 2 || got[1] != 1 {
		t.Fatalf("results per Emit %v, want the last result alone, at once", got)
	}
	left, err := st.Unfinished()
	if err != nil || len(left) != 0 {
		t.Fatalf("unfinished attempts %v (%v), want none", left, err)
	}
}

// A task.started with no task.finished after it goes out by itself once
// it has waited startedLinger for company; one followed by its
// task.finished goes out with it, first.
func TestStartedAloneGoesOut(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := localstate.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := &recorder{}
	r := newReporter(rec, st, log, func(error) bool { return false }, func() bool { return false })
	defer r.stop()
	r.started(event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "alone", Attempt: 1}))
	poll.Eventually(t, 10*time.Second, "the lone task.started emitted", func() bool { return rec.started("alone") })

	a := localstate.Attempt{Run: "r1", Step: "pair", Attempt: 1}
	if err := st.MarkStarted(a); err != nil {
		t.Fatal(err)
	}
	r.started(event.MustDraft(event.TaskStarted, "r1", event.TaskStartedData{Step: "pair", Attempt: 1}))
	if err := r.finished(event.MustDraft(event.TaskFinished, "r1", event.TaskFinishedData{Step: "pair", Attempt: 1, Status: event.TaskSucceeded}), a); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var types []event.Type
	for _, d := range rec.drafts {
		types = append(types, d.Type)
	}
	if len(types) != 3 || types[1] != event.TaskStarted || types[2] != event.TaskFinished {
		t.Fatalf("emitted %v, want the lone started, then the pair's started before its finished", types)
	}
}
