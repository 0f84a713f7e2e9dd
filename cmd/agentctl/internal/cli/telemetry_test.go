package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/telemetry"
)

// TestTelemetryExport: on a real node, a run with a failing step and an
// operator's rating exports as JSON lines: the failure with its command,
// exit code and duration, the run's end, and the feedback; --run keeps
// to one run, --until before the run exports nothing, bad windows are
// usage errors.
func TestTelemetryExport(t *testing.T) {
	h, n := nodeHarness(t)
	id := n.Submit(t, "fail.yaml", "goal: fail once\nsteps:\n  - id: boom\n    run: 'exit 3'\n    on_failure: abort\n")
	other := n.Submit(t, "ok.yaml", "goal: fine\nsteps:\n  - id: one\n    run: 'true'\n")
	for _, r := range []string{id, other} {
		poll.Eventually(t, 20*time.Second, "run "+r+" ended", func() bool {
			s, err := n.API.RunSummary(context.Background(), r)
			return err == nil && finished(s.Status)
		})
	}
	if r := h.run("run", "rate", id, "down", "--reason", "boom", "--timeout", "20s"); r.code != 0 {
		t.Fatalf("run rate = %+v", r)
	}
	var recs []telemetry.Record
	poll.Eventually(t, 10*time.Second, "the export holds the rating", func() bool {
		r := h.run("telemetry", "export", "--since", "1h")
		if r.code != 0 {
			t.Fatalf("telemetry export = %+v", r)
		}
		recs = decodeRecords(t, r.stdout)
		return len(recs) > 0 && recs[len(recs)-1].Event == telemetry.KindFeedback
	})
	byKind := map[telemetry.Kind][]telemetry.Record{}
	for _, r := range recs {
		byKind[r.Event] = append(byKind[r.Event], r)
	}
	fail := byKind[telemetry.KindTaskFailure]
	if len(fail) != 1 || fail[0].Run != id || fail[0].Command != "exit 3" || fail[0].ExitCode == nil || *fail[0].ExitCode != 3 ||
		fail[0].Duration == nil || fail[0].Goal != "fail once" || fail[0].Step != "boom" || fail[0].Node == "" || fail[0].Seq == 0 {
		t.Fatalf("task failures = %+v", fail)
	}
	if ok := byKind[telemetry.KindStep]; len(ok) != 1 || ok[0].Run != other || ok[0].Command != "true" || *ok[0].ExitCode != 0 {
		t.Fatalf("steps = %+v", ok)
	}
	if runs := byKind[telemetry.KindRun]; len(runs) != 2 {
		t.Fatalf("runs = %+v", runs)
	}
	if fb := byKind[telemetry.KindFeedback]; len(fb) != 1 || fb[0].Rating != "down" || fb[0].Node != n.Operator.ID || fb[0].Reason != "boom" || fb[0].Type != event.RunRated {
		t.Fatalf("feedback = %+v", fb)
	}

	one := decodeRecords(t, h.run("telemetry", "export", "--run", other[:13], "--since", "1h").stdout)
	if len(one) != 2 || one[0].Run != other || one[1].Event != telemetry.KindRun {
		t.Fatalf("--run: %+v", one)
	}
	if r := h.run("telemetry", "export", "--since", "2h", "--until", "1h"); r.code != 0 || r.stdout != "" {
		t.Fatalf("an export of a window before the runs = %+v", r)
	}
	if r := h.run("telemetry", "export", "--since", "yesterday"); r.code == 0 || !strings.Contains(r.stderr, "neither a duration") {
		t.Fatalf("--since yesterday = %+v", r)
	}
	if r := h.run("telemetry", "export", "--since", "1h", "--until", "2h"); r.code == 0 || !strings.Contains(r.stderr, "must come after") {
		t.Fatalf("--until before --since = %+v", r)
	}
}

func decodeRecords(t *testing.T, out string) []telemetry.Record {
	t.Helper()
	var recs []telemetry.Record
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r telemetry.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestTelemetryExportFollow: on a real node, export --follow prints what
// is committed, then each record as it commits, until Ctrl-C (exit 0).
func TestTelemetryExportFollow(t *testing.T) {
	h, n := nodeHarness(t)
	id := n.Submit(t, "ok.yaml", "goal: fine\nsteps:\n  - id: one\n    run: 'true'\n")
	poll.Eventually(t, 20*time.Second, "the run ended", func() bool {
		s, err := n.API.RunSummary(context.Background(), id)
		return err == nil && finished(s.Status)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := new(syncBuffer)
	done := make(chan result, 1)
	go func() { done <- h.runCtx(ctx, out, "telemetry", "export", "--since", "1h", "--follow") }()
	poll.Eventually(t, 10*time.Second, "the committed records", func() bool { return strings.Count(out.String(), "\n") == 2 })
	if r := h.run("run", "rate", id, "up", "--timeout", "20s"); r.code != 0 {
		t.Fatalf("run rate = %+v", r)
	}
	poll.Eventually(t, 20*time.Second, "the rating while following", func() bool {
		recs := decodeRecords(t, out.String())
		return len(recs) == 3 && recs[2].Event == telemetry.KindFeedback && recs[2].Run == id
	})
	cancel() // Ctrl-C
	if r := <-done; r.code != 0 {
		t.Fatalf("follow ended with %+v", r)
	}
}
