package planner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// judge is a text source that also judges critiques with f.
type judge struct {
	SourceFunc
	f func(ctx context.Context, req event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error)
}

func (j judge) Critique(ctx context.Context, _ string, req event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error) {
	return j.f(ctx, req)
}

func newJudge(f func(ctx context.Context, req event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error)) judge {
	return judge{SourceFunc: SourceFunc{name: "llm"}, f: f}
}

// request folds a critique.requested for attempt of step c of run into
// every planner of b.
func (b *bus) request(run string, attempt int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := b.l.event(event.CritiqueRequested, run, event.CritiqueRequestedData{Step: "c", Attempt: attempt,
		Target: "a", Criteria: "prints hello", TargetStatus: event.StepSucceeded, Output: "hello"})
	b.events = append(b.events, ev)
	foldMu.Lock()
	for _, p := range b.planners {
		p.Fold(ev)
	}
	foldMu.Unlock()
}

func recordedOf(t *testing.T, ev event.Event) event.CritiqueRecordedData {
	t.Helper()
	var d event.CritiqueRecordedData
	if err := ev.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestOnePlannerWithAModelJudges: of a planner without a model and two
// with one, only one with a model claims a critique attempt and records
// its verdict; a retry (the next attempt) is claimed and judged anew.
func TestOnePlannerWithAModelJudges(t *testing.T) {
	b := &bus{}
	calls := make(chan int, 10)
	f := func(_ context.Context, req event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error) {
		calls <- req.Attempt
		return event.VerdictFail, "it says hello, " + req.Output, &event.PlannerInfo{Planner: "test", Responses: []string{"{}"}}, nil
	}
	ps := []*Planner{
		b.planner(t, "plain", Config{ClaimTimeout: time.Hour}),
		b.planner(t, "smart1", Config{Text: newJudge(f), ClaimTimeout: time.Hour}),
		b.planner(t, "smart2", Config{Text: newJudge(f), ClaimTimeout: time.Hour}),
	}
	b.request("r", 1)
	for _, p := range ps {
		p.Settled(true)
	}
	poll.Eventually(t, 10*time.Second, "a verdict", func() bool { return len(b.of(event.CritiqueRecorded)) == 1 })
	rec := b.of(event.CritiqueRecorded)[0]
	d := recordedOf(t, rec)
	if d.Step != "c" || d.Attempt != 1 || d.Verdict != event.VerdictFail || d.Judgement != "it says hello, hello" || d.Planner == nil {
		t.Fatalf("verdict %+v", d)
	}
	var claim event.PlanClaimedData
	claims := b.of(event.PlanClaimed)
	if len(claims) == 0 || claims[0].Decode(&claim) != nil || claim.Step != "c" || claim.Attempt != 1 || claims[0].Node != rec.Node {
		t.Fatalf("claims %+v, verdict by %s", claims, rec.Node)
	}
	for _, c := range claims {
		if c.Node == "plain" {
			t.Fatal("the planner without a model claimed")
		}
	}
	b.request("r", 2)
	poll.Eventually(t, 10*time.Second, "the retry's verdict", func() bool { return len(b.of(event.CritiqueRecorded)) == 2 })
	if d := recordedOf(t, b.of(event.CritiqueRecorded)[1]); d.Attempt != 2 {
		t.Fatalf("second verdict %+v", d)
	}
	if len(calls) != 2 {
		t.Fatalf("judged %d times, want 2", len(calls))
	}
	for _, p := range ps {
		p.mu.Lock()
		n := len(p.mu.runs.pending)
		p.mu.Unlock()
		if n != 0 {
			t.Fatalf("%s still has %d pending", p.env.Node, n)
		}
	}
}

// TestNoPlannerCanJudge: a critique no planner can judge is recorded
// verdict error with code no_planner once the claim timeout has passed.
func TestNoPlannerCanJudge(t *testing.T) {
	b := &bus{}
	p := b.planner(t, "plain", Config{ClaimTimeout: 100 * time.Millisecond})
	b.request("r", 1)
	p.Settled(true)
	poll.Eventually(t, 10*time.Second, "the verdict", func() bool { return len(b.of(event.CritiqueRecorded)) == 1 })
	d := recordedOf(t, b.of(event.CritiqueRecorded)[0])
	if d.Verdict != event.VerdictError || d.Code != event.NoPlanner || d.Error == "" || len(b.of(event.PlanClaimed)) != 0 {
		t.Fatalf("verdict %+v, claims %d", d, len(b.of(event.PlanClaimed)))
	}
}

// TestCritiqueErrors: a source's error, a timeout, and an answer that is
// no verdict are recorded as verdict error with the reason and the
// provenance as far as it got.
func TestCritiqueErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func(ctx context.Context, req event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error)
		want string
	}{
		{"error", func(context.Context, event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error) {
			return "", "", &event.PlannerInfo{Planner: "test"}, errors.New("model down")
		}, "model down"},
		{"timeout", func(ctx context.Context, _ event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error) {
			<-ctx.Done()
			return "", "", &event.PlannerInfo{Planner: "test"}, ctx.Err()
		}, "timed out after 50ms"},
		{"no verdict", func(context.Context, event.CritiqueRequestedData) (event.CritiqueVerdict, string, *event.PlannerInfo, error) {
			return "maybe", "hmm", &event.PlannerInfo{Planner: "test"}, nil
		}, `gave no verdict ("maybe")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &bus{}
			p := b.planner(t, "smart", Config{Text: newJudge(tt.f), Timeout: 50 * time.Millisecond, ClaimTimeout: time.Hour})
			b.request("r", 1)
			p.Settled(true)
			poll.Eventually(t, 10*time.Second, "the verdict", func() bool { return len(b.of(event.CritiqueRecorded)) == 1 })
			d := recordedOf(t, b.of(event.CritiqueRecorded)[0])
			if d.Verdict != event.VerdictError || d.Code != "" || !strings.Contains(d.Error, tt.want) || d.Planner == nil || d.Judgement != "" {
				t.Fatalf("verdict %+v, want error with %q", d, tt.want)
			}
		})
	}
}

// TestFinishedRunDropsItsCritique: a critique whose run finished before
// any planner could judge it is forgotten, unjudged.
func TestFinishedRunDropsItsCritique(t *testing.T) {
	b := &bus{}
	p := b.planner(t, "plain", Config{ClaimTimeout: time.Hour})
	b.request("r", 1)
	fold(p, b.l.event(event.RunFinished, "r", event.RunFinishedData{Status: event.RunCancelled}))
	p.mu.Lock()
	n := len(p.mu.runs.pending)
	p.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d pending after run.finished", n)
	}
}
