package executor

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/executor/localstate"
)

// An attempt the local state holds as started but not finished (the
// executor died during it) is reported at the next start as failed,
// transient and Interrupted, with an Error for people that says so.
func TestRestartReportsInterrupted(t *testing.T) {
	h := newHarness(t)
	state := t.TempDir()
	st, err := localstate.Open(state, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().UTC().Add(-time.Minute)
	if err := st.MarkStarted(localstate.Attempt{Run: "r1", Step: "deploy", Attempt: 2, State: localstate.StateStarted, Started: started}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h.start("n1", state, rec, nil)
	fin := rec.finished("deploy")
	if len(fin) != 1 {
		t.Fatalf("reports for the unfinished attempt: %+v, want one", fin)
	}
	f := fin[0]
	if !f.Interrupted || f.Status != event.TaskFailed || f.Class != event.ClassTransient || f.Attempt != 2 ||
		!strings.HasPrefix(f.Error, "interrupted: ") || !f.Started.Equal(started) {
		t.Fatalf("report = %+v, want attempt 2 failed, transient, interrupted", f)
	}
}
