package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProposesPlanFromFile(t *testing.T) {
	ob := &outbox{}
	p := start(t, ob, Config{})
	var l ledger
	file := readExample(t, "hello.yaml")
	fold(p, l.event(event.GoalSubmitted, "run-1", event.GoalSubmittedData{Goal: "hello", PlanFile: file, PlanName: "hello.yaml"}))
	p.Settled(true)

	got := proposed(t, one(t, ob, "run-1"))
	want, err := plan.Parse("hello.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	// Compare as JSON travels: that is what the orchestrator folds.
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got.Plan)
	if got.Revision != 1 || got.Source != "file" || string(gotJSON) != string(wantJSON) {
		t.Errorf("proposal: revision %d source %q plan\n%s\nwant\n%s", got.Revision, got.Source, gotJSON, wantJSON)
	}
}

func TestPlanGoalDefaultsToSubmittedGoal(t *testing.T) {
	ob := &outbox{}
	p := start(t, ob, Config{})
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{Goal: "the goal", PlanFile: "steps: [{id: a, run: x}]"}))
	p.Settled(true)
	if got := proposed(t, one(t, ob, "r")).Plan.Goal; got != "the goal" {
		t.Errorf("plan goal %q", got)
	}
}

func TestRejections(t *testing.T) {
	slowSource := SourceFunc{name: "slow", f: func(ctx context.Context, _ string, _ event.GoalSubmittedData) (*event.Plan, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	tests := []struct {
		name  string
		cfg   Config
		goal  any
		wants []string
	}{
		{"bad plan file", Config{}, event.GoalSubmittedData{Goal: "g", PlanName: "plan.yaml", PlanFile: "steps:\n  - id: build\n    run: make\n  - id: test\n    depends_on: [bulid]\n"},
			[]string{`plan.yaml:5:18: steps[1].depends_on[0]: unknown step "bulid" (did you mean "build"?)`}},
		{"free text without LLM", Config{ClaimTimeout: 50 * time.Millisecond}, event.GoalSubmittedData{Goal: "make it so", Text: "make it so"},
			[]string{"no planner that can plan this goal claimed it within 50ms", ErrNeedLLM.Error(), "configure an LLM planner", "submit a plan file", "agentctl goal submit -f"}},
		{"no goal", Config{}, event.GoalSubmittedData{Goal: "g"}, []string{ErrNoGoal.Error()}},
		{"unreadable goal", Config{}, "not an object", []string{"unreadable goal"}},
		{"source error", Config{Text: SourceFunc{name: "llm", f: func(context.Context, string, event.GoalSubmittedData) (*event.Plan, error) {
			return nil, errors.New("model said no")
		}}}, event.GoalSubmittedData{Text: "t"}, []string{"model said no"}},
		{"source returns nil", Config{Text: SourceFunc{name: "llm", f: func(context.Context, string, event.GoalSubmittedData) (*event.Plan, error) {
			return nil, nil
		}}}, event.GoalSubmittedData{Text: "t"}, []string{"llm planner returned no plan"}},
		{"source returns invalid plan", Config{Text: SourceFunc{name: "llm", f: func(context.Context, string, event.GoalSubmittedData) (*event.Plan, error) {
			return &event.Plan{Steps: []event.Step{{ID: "a", Run: "x", DependsOn: []string{"a"}}}}, nil
		}}}, event.GoalSubmittedData{Text: "t"}, []string{`steps[0].depends_on[0]: step "a" depends on itself`}},
		{"source times out", Config{Text: slowSource, Timeout: 50 * time.Millisecond}, event.GoalSubmittedData{Text: "t"},
			[]string{"slow planner timed out after 50ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ob := &outbox{}
			p := start(t, ob, tt.cfg)
			var l ledger
			fold(p, l.event(event.GoalSubmitted, "r", tt.goal))
			p.Settled(true)
			msg := rejected(t, one(t, ob, "r"))
			for _, w := range tt.wants {
				if !strings.Contains(msg, w) {
					t.Errorf("rejection %q does not contain %q", msg, w)
				}
			}
		})
	}
}

// SourceFunc is a Source made of a function, for tests.
type SourceFunc struct {
	name string
	f    func(ctx context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, error)
}

func (s SourceFunc) Name() string { return s.name }
func (s SourceFunc) Plan(ctx context.Context, run string, goal event.GoalSubmittedData) (*event.Plan, error) {
	return s.f(ctx, run, goal)
}

func TestTextSourceProposalIsNormalized(t *testing.T) {
	var gotRun atomic.Value
	src := SourceFunc{name: "llm", f: func(_ context.Context, run string, g event.GoalSubmittedData) (*event.Plan, error) {
		gotRun.Store(run + "|" + g.Text)
		return &event.Plan{Goal: g.Text, Steps: []event.Step{
			{ID: "b", Run: "echo b", DependsOn: []string{"a", "a"}},
			{ID: "a", Run: "echo a"},
		}}, nil
	}}
	ob := &outbox{}
	p := start(t, ob, Config{Text: src})
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{Goal: "say hi", Text: "say hi"}))
	p.Settled(true)
	got := proposed(t, one(t, ob, "r"))
	if got.Source != "llm" || gotRun.Load() != "r|say hi" {
		t.Errorf("source %q called with %v", got.Source, gotRun.Load())
	}
	if ids := []string{got.Plan.Steps[0].ID, got.Plan.Steps[1].ID}; !slices.Equal(ids, []string{"a", "b"}) ||
		got.Plan.Steps[0].Kind != event.KindShell || !slices.Equal(got.Plan.Steps[1].DependsOn, []string{"a"}) {
		t.Errorf("plan not normalized: %+v", got.Plan.Steps)
	}
}

func TestPlanFileWinsOverText(t *testing.T) {
	ob := &outbox{}
	p := start(t, ob, Config{})
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{Text: "t", PlanFile: "steps: [{id: a, run: x}]"}))
	p.Settled(true)
	if got := proposed(t, one(t, ob, "r")); got.Source != "file" {
		t.Errorf("source %q", got.Source)
	}
}

func TestOversizedPlanRejected(t *testing.T) {
	var b strings.Builder
	b.WriteString("steps:\n")
	// Each step is ~125 bytes of YAML but ~165 bytes of JSON once normalized
	// (kind and on_failure filled in), so n steps fit the file limit but not the event.
	n := envelope.MaxEventBytes/150 + 100
	for i := range n {
		fmt.Fprintf(&b, "  - {id: step-%d, run: echo %s}\n", i, strings.Repeat("x", 100))
	}
	ob := &outbox{}
	p := start(t, ob, Config{})
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{PlanFile: b.String()}))
	p.Settled(true)
	msg := rejected(t, one(t, ob, "r"))
	if want := fmt.Sprintf("the limit is %d", envelope.MaxEventBytes); !strings.Contains(msg, want) || !strings.Contains(msg, fmt.Sprintf("%d steps", n)) {
		t.Errorf("rejection %q", msg)
	}
}

// TestNothingBeforeLive: runs folded during restore are not planned until
// the node is live.
func TestNothingBeforeLive(t *testing.T) {
	p := New(roles.Env{Emit: &outbox{}}, Config{})
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{PlanFile: "steps: [{id: a}]"}))
	p.Settled(false)
	if jobs, _ := p.take(); len(jobs) != 0 {
		t.Fatalf("took %d jobs before live", len(jobs))
	}
	p.Settled(true)
	if jobs, _ := p.take(); len(jobs) != 1 || jobs[0].id != "r" {
		t.Fatalf("took %+v once live", jobs)
	}
	if jobs, _ := p.take(); len(jobs) != 0 {
		t.Fatalf("took a run twice: %+v", jobs)
	}
}

// TestRestartPlansOnlyOpenRuns: after a restart the ledger is folded again;
// only runs without a proposal, rejection or cancel are planned, in goal
// order, each once.
func TestRestartPlansOnlyOpenRuns(t *testing.T) {
	ob := &outbox{}
	p := start(t, ob, Config{Workers: 1})
	var l ledger
	file := event.GoalSubmittedData{PlanFile: "steps: [{id: a, run: x}]"}
	history := []event.Event{
		l.event(event.GoalSubmitted, "proposed", file),
		l.event(event.PlanProposed, "proposed", event.PlanProposedData{Revision: 1, Source: "file"}),
		l.event(event.GoalSubmitted, "open-1", file),
		l.event(event.GoalSubmitted, "rejected", file),
		l.event(event.PlanRejected, "rejected", event.PlanRejectedData{Error: "x"}),
		l.event(event.GoalSubmitted, "cancelled", file),
		l.event(event.RunCancel, "cancelled", event.RunCancelData{}),
		l.event(event.GoalSubmitted, "open-2", file),
		l.event(event.GoalSubmitted, "open-1", file), // a duplicate goal: ignored
	}
	for _, ev := range history {
		fold(p, ev)
	}
	p.Settled(false)
	p.Settled(true)
	// A goal submitted after going live is a barrier: with one worker and
	// goal order, everything planned before it has been emitted by then.
	fold(p, l.event(event.GoalSubmitted, "barrier", file))
	p.Settled(true)
	one(t, ob, "barrier")
	if got, want := ob.runs(), []string{"open-1", "open-2", "barrier"}; !slices.Equal(got, want) {
		t.Errorf("planned %v, want %v", got, want)
	}
}

// TestNoSecondPlanWhileInFlight: a run whose emit is in progress, or whose
// proposal is emitted but not yet folded, is not planned again however
// often the node settles.
func TestNoSecondPlanWhileInFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	ob := &outbox{}
	ob.hook = func(ctx context.Context, d event.Draft) error {
		if d.Run == "slow" {
			close(entered) // panics on a second emit of "slow"
			<-release
		}
		return nil
	}
	p := start(t, ob, Config{Workers: 2})
	var l ledger
	file := event.GoalSubmittedData{PlanFile: "steps: [{id: a, run: x}]"}
	fold(p, l.event(event.GoalSubmitted, "slow", file))
	p.Settled(true)
	<-entered
	for range 5 {
		p.Settled(true)
	}
	// "fast" is folded after "slow" is in flight: once it is emitted, the
	// loop has run again with "slow" claimed.
	fold(p, l.event(event.GoalSubmitted, "fast", file))
	p.Settled(true)
	one(t, ob, "fast")
	close(release)
	d := one(t, ob, "slow")

	// Emitted but not folded yet: still not planned again.
	fold(p, l.event(event.GoalSubmitted, "barrier", file))
	p.Settled(true)
	one(t, ob, "barrier")
	if n := ob.attempts("slow"); n != 1 {
		t.Errorf("slow emitted %d times", n)
	}
	// Folding its proposal closes the run.
	fold(p, l.commit(d))
	p.mu.Lock()
	_, open := p.mu.runs.pending["slow"]
	p.mu.Unlock()
	if open {
		t.Error("run still open after its proposal was folded")
	}
}

func TestEmitFailureIsRetried(t *testing.T) {
	var fails atomic.Int32
	fails.Store(2)
	ob := &outbox{}
	ob.hook = func(ctx context.Context, d event.Draft) error {
		if fails.Add(-1) >= 0 {
			return errors.New("outbox: disk full")
		}
		return nil
	}
	p := start(t, ob, Config{RetryBackoff: 5 * time.Millisecond})
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{PlanFile: "steps: [{id: a, run: x}]"}))
	p.Settled(true)
	proposed(t, one(t, ob, "r"))
	if n := ob.attempts("r"); n != 3 {
		t.Errorf("%d emit attempts, want 3", n)
	}
}

func TestBackoff(t *testing.T) {
	p := New(roles.Env{}, Config{RetryBackoff: time.Second, MaxRetryBackoff: 5 * time.Second})
	var got []time.Duration
	for f := 1; f <= 5; f++ {
		got = append(got, p.backoff(f))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("backoff %v, want %v", got, want)
	}
}

// TestStopDuringEmit: Stop cuts a job short without emitting; the run is
// planned after the planner starts again.
func TestStopDuringEmit(t *testing.T) {
	entered := make(chan struct{}, 1)
	var block atomic.Bool
	block.Store(true)
	ob := &outbox{}
	ob.hook = func(ctx context.Context, d event.Draft) error {
		if !block.Load() {
			return nil
		}
		entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	p := New(roles.Env{Emit: ob}, Config{})
	ob.attach(p)
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{PlanFile: "steps: [{id: a, run: x}]"}))
	p.Settled(true)
	<-entered
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := ob.byRun("r"); len(got) != 0 {
		t.Fatalf("emitted %d drafts after a cut-short job", len(got))
	}
	block.Store(false)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(stopCtx)
	p.Settled(true)
	proposed(t, one(t, ob, "r"))
}

func TestStartStopIdempotent(t *testing.T) {
	ctx := context.Background()
	p := New(roles.Env{Emit: &outbox{}}, Config{})
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	for range 2 {
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if p.Name() != event.RolePlanner {
		t.Errorf("Name %q", p.Name())
	}
	if err := New(roles.Env{}, Config{}).Start(ctx); !errors.Is(err, ErrNoEmitter) {
		t.Errorf("Start without emitter: %v", err)
	}
}

// TestStopTimesOut: Stop gives up when a source ignores its context, and
// says so; the job ends later and leaves nothing behind.
func TestStopTimesOut(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	src := SourceFunc{name: "stubborn", f: func(context.Context, string, event.GoalSubmittedData) (*event.Plan, error) {
		close(entered)
		<-release
		return nil, errors.New("late")
	}}
	ob := &outbox{}
	p := New(roles.Env{Emit: ob}, Config{Text: src})
	ob.attach(p)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var l ledger
	fold(p, l.event(event.GoalSubmitted, "r", event.GoalSubmittedData{Text: "t"}))
	p.Settled(true)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop: %v, want deadline exceeded", err)
	}
	close(release)
	p.wg.Wait()
	if got := ob.byRun("r"); len(got) != 0 {
		t.Errorf("a job cut short by Stop emitted %d drafts", len(got))
	}
}
