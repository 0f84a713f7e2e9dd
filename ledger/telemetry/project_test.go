package telemetry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger/telemetry"
)

// ledger builds events of one run in order, with seqs and times.
type ledger struct {
	seq uint64
	at  time.Time
	evs []event.Event
}

func (l *ledger) add(t event.Type, run, node string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	l.seq++
	l.at = l.at.Add(time.Second)
	l.evs = append(l.evs, event.Event{Seq: l.seq, Type: t, Run: run, Node: node, Time: l.at, Data: b})
}

func project(t *testing.T, evs []event.Event) []telemetry.Record {
	t.Helper()
	p := telemetry.NewProjector()
	var out []telemetry.Record
	for _, ev := range evs {
		if err := p.Project(ev, func(r telemetry.Record) error { out = append(out, r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// oneRun is a run of a model's plan: a gated step an operator edits, a
// tool call, a failure, a rating, and its end by a budget.
func oneRun() *ledger {
	l := &ledger{at: time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)}
	const run = "0190bbbb-0000-7000-8000-000000000003"
	l.add(event.GoalSubmitted, run, "alice", event.GoalSubmittedData{Goal: "deploy the app", Family: "deploy"})
	l.add(event.PlanProposed, run, "planner-a", event.PlanProposedData{Revision: 1, Source: "llm",
		Plan:    event.Plan{Steps: []event.Step{{ID: "push", Kind: event.KindShell, Run: "./deploy.sh"}}},
		Planner: &event.PlannerInfo{Model: "qwen2.5-coder:7b", Planner: "llm/1", Build: "v0.9.0", Template: "9c1d4e7a2b6f0385"}})
	l.add(event.PlanAccepted, run, "orch", event.PlanAcceptedData{Revision: 1})
	l.add(event.GateOpened, run, "orch", event.GateOpenedData{Step: "push", Attempt: 1, Kind: event.GatePolicy,
		Verdict: &event.Verdict{Action: "confirm", Level: "high", Why: "deploys"}, Command: "./deploy.sh"})
	l.add(event.GateDecided, run, "bob", event.GateDecidedData{Step: "push", Action: event.GateEdit, Command: "./deploy.sh staging", Reason: "not prod"})
	l.add(event.TaskAssigned, run, "orch", event.TaskAssignedData{Step: event.Step{ID: "push", Kind: event.KindShell, Run: "./deploy.sh staging"}, Attempt: 1, Node: "node-b"})
	l.add(event.TaskFinished, run, "node-b", event.TaskFinishedData{Step: "push", Attempt: 1, Node: "node-b", Status: event.TaskFailed,
		Class: event.ClassTransient, ExitCode: 2, Error: "exit status 2", Duration: event.Duration(1500 * time.Millisecond), CommandHash: "3f2a"})
	l.add(event.TaskAssigned, run, "orch", event.TaskAssignedData{Step: event.Step{ID: "read", Kind: event.KindTool, Tool: "fs/read_text_file"}, Attempt: 1, Node: "node-c"})
	l.add(event.TaskFinished, run, "node-c", event.TaskFinishedData{Step: "read", Attempt: 1, Node: "node-c", Status: event.TaskSucceeded, Duration: event.Duration(time.Second)})
	l.add(event.RunFinished, run, "orch", event.RunFinishedData{Status: event.RunFailed, Code: "budget_exceeded", Reason: "more steps than budgets.steps"})
	l.add(event.RunRated, run, "carol", event.RunRatedData{Rating: event.RatingDown, Reason: "stopped too early", Operator: "carol"})
	return l
}

// TestProjection: each kind of record, with the run's goal, the planner's
// model and version, the command as edited, the gate's risk level, and
// the evidence seq.
func TestProjection(t *testing.T) {
	got := project(t, oneRun().evs)
	var kinds []string
	for _, r := range got {
		kinds = append(kinds, string(r.Event))
	}
	want := "escalation user_correction task_failure tool_call escalation run feedback"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("kinds = %v, want %s", kinds, want)
	}
	for _, r := range got[:6] {
		if r.Goal != "deploy the app" || r.PlannerModel != "qwen2.5-coder:7b" || r.PlannerVersion != "v0.9.0+llm/1+9c1d4e7a2b6f0385" || r.Family != "deploy" {
			t.Errorf("%s lacks the run's context: %+v", r.Event, r)
		}
	}
	esc, corr, fail, tool, budget, run, fb := got[0], got[1], got[2], got[3], got[4], got[5], got[6]
	if esc.Action != "policy" || esc.RiskLevel != "high" || esc.Command != "./deploy.sh" || esc.Step != "push" || esc.Seq != 4 {
		t.Errorf("escalation = %+v", esc)
	}
	if corr.Action != "edit" || corr.Node != "bob" || corr.Command != "./deploy.sh staging" || corr.Reason != "not prod" {
		t.Errorf("correction = %+v", corr)
	}
	if fail.Command != "./deploy.sh staging" || fail.RiskLevel != "high" || *fail.ExitCode != 2 || *fail.Duration != 1.5 ||
		fail.Node != "node-b" || fail.Class != "transient" || fail.Status != "failed" || fail.Seq != 7 || fail.Type != event.TaskFinished {
		t.Errorf("failure = %+v", fail)
	}
	if tool.Command != "fs/read_text_file" || tool.Kind != event.KindTool || tool.Status != "succeeded" || *tool.ExitCode != 0 {
		t.Errorf("tool call = %+v", tool)
	}
	if budget.Action != "budget" || budget.Code != "budget_exceeded" {
		t.Errorf("budget escalation = %+v", budget)
	}
	if run.Status != "failed" || run.Duration == nil || *run.Duration != 9 {
		t.Errorf("run = %+v", run)
	}
	// The rating comes after the run ended: its context is gone.
	if fb.Rating != "down" || fb.Node != "carol" || fb.Reason != "stopped too early" || fb.Goal != "" {
		t.Errorf("feedback = %+v", fb)
	}
}

// TestProjectionRedacts: a secret planted in a command, an operator's
// reason and an error comes out redacted, in every record that carries it.
func TestProjectionRedacts(t *testing.T) {
	const secret = "ghp_0123456789abcdefghijABCDEFGHIJ0123456789"
	l := &ledger{}
	const run = "r1"
	l.add(event.GoalSubmitted, run, "alice", event.GoalSubmittedData{Goal: "use token " + secret})
	l.add(event.TaskAssigned, run, "orch", event.TaskAssignedData{Step: event.Step{ID: "s", Kind: event.KindShell, Run: "curl -H 'Authorization: token " + secret + "' x"}, Attempt: 1})
	l.add(event.TaskFinished, run, "n", event.TaskFinishedData{Step: "s", Attempt: 1, Status: event.TaskFailed, Error: "bad token " + secret})
	l.add(event.RunRated, run, "alice", event.RunRatedData{Rating: event.RatingDown, Reason: "leaked " + secret})
	var b bytes.Buffer
	for _, r := range project(t, l.evs) {
		if err := json.NewEncoder(&b).Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(b.String(), secret) || strings.Contains(b.String(), "0123456789abcdefghij") {
		t.Fatalf("the export carries the secret:\n%s", b.String())
	}
	if strings.Count(b.String(), "[REDACTED") < 4 {
		t.Fatalf("want the goal, command, error and reason redacted:\n%s", b.String())
	}
}

// TestProjectionCutsLongCommands: a command longer than MaxCommand is cut
// at a character boundary and marked.
func TestProjectionCutsLongCommands(t *testing.T) {
	l := &ledger{}
	long := strings.Repeat("é", telemetry.MaxCommand)
	l.add(event.TaskAssigned, "r", "orch", event.TaskAssignedData{Step: event.Step{ID: "s", Kind: event.KindShell, Run: long}, Attempt: 1})
	l.add(event.TaskFinished, "r", "n", event.TaskFinishedData{Step: "s", Attempt: 1, Status: event.TaskSucceeded})
	got := project(t, l.evs)
	if len(got) != 1 || len(got[0].Command) > telemetry.MaxCommand || !strings.HasSuffix(got[0].Command, "é…") {
		t.Fatalf("command of %d bytes: %q…", len(got[0].Command), got[0].Command[:10])
	}
}

// TestProjectionBadPayload: a payload that does not decode is an error
// naming its seq; the projector goes on with the next event.
func TestProjectionBadPayload(t *testing.T) {
	p := telemetry.NewProjector()
	err := p.Project(event.Event{Seq: 9, Type: event.TaskFinished, Run: "r", Data: []byte(`{"attempt":"x"}`)}, func(telemetry.Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "seq 9") {
		t.Fatalf("err = %v", err)
	}
	n := 0
	l := oneRun()
	for _, ev := range l.evs {
		if err := p.Project(ev, func(telemetry.Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n != 7 {
		t.Fatalf("%d records after a bad payload, want 7", n)
	}
}

// synthetic yields n events of runs of five (goal, assignment, finish,
// run end, and a run that never ends every tenth), encoded as a ledger
// would hold them.
func synthetic(n int, yield func(event.Event)) {
	l := &ledger{at: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	for i := 0; l.seq < uint64(n); i++ {
		run := fmt.Sprintf("0190bbbb-0000-7000-8000-%012d", i)
		l.evs = l.evs[:0]
		l.add(event.GoalSubmitted, run, "alice", event.GoalSubmittedData{Goal: "goal " + run})
		l.add(event.TaskAssigned, run, "orch", event.TaskAssignedData{Step: event.Step{ID: "s", Kind: event.KindShell, Run: "make -j4 " + run}, Attempt: 1, Node: "node-b"})
		l.add(event.TaskFinished, run, "node-b", event.TaskFinishedData{Step: "s", Attempt: 1, Node: "node-b", Status: event.TaskSucceeded, Duration: event.Duration(time.Second)})
		l.add(event.TaskFinished, run, "node-b", event.TaskFinishedData{Step: "t", Attempt: 1, Node: "node-b", Status: event.TaskFailed, ExitCode: 1})
		if i%10 != 0 {
			l.add(event.RunFinished, run, "orch", event.RunFinishedData{Status: event.RunSucceeded})
		}
		for _, ev := range l.evs {
			yield(ev)
		}
	}
}

// TestExportBoundedMemory: projecting a long ledger (1M events; 100k with
// -short) into JSON lines keeps the heap under a bound, however many runs
// pass and however many never end.
func TestExportBoundedMemory(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	const bound = 64 << 20
	p := telemetry.NewProjector()
	enc := json.NewEncoder(io.Discard)
	var ms runtime.MemStats
	var peak uint64
	records, count := 0, 0
	synthetic(n, func(ev event.Event) {
		if err := p.Project(ev, func(r telemetry.Record) error { records++; return enc.Encode(r) }); err != nil {
			t.Fatal(err)
		}
		if count++; count%100_000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	})
	if peak > bound {
		t.Fatalf("heap in use reached %d MB projecting %d events, bound %d MB", peak>>20, n, bound>>20)
	}
	if p.Runs() > telemetry.MaxRuns {
		t.Fatalf("the projector holds %d runs, more than %d", p.Runs(), telemetry.MaxRuns)
	}
	if records < n/2 {
		t.Fatalf("%d records of %d events", records, n)
	}
	t.Logf("%d events, %d records, peak heap in use %d MB, %d runs held", count, records, peak>>20, p.Runs())
}
