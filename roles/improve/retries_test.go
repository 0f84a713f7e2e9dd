package improve

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

func transient(exit int) event.TaskFinishedData {
	return event.TaskFinishedData{Status: event.TaskFailed, Class: event.ClassTransient, ExitCode: exit, Duration: event.Duration(time.Second), Error: "connection reset"}
}

// TestPatternRetries: steps of a family that failed transiently three
// times with no retries in force give a defaults.retries proposal for
// the family, validated by replaying the recorded attempts (the three
// failures retried, two of them passed when run again); a family with
// retries in force, or whose steps set their own, gives none.
func TestPatternRetries(t *testing.T) {
	p := plant(t)
	pull := event.Step{ID: "pull", Run: "docker pull registry/app"}
	own := event.Step{ID: "own", Run: "docker pull registry/own", Retries: 2}
	var want []uint64
	for i := range 3 {
		run := fmt.Sprintf("r%d", i)
		p.run(run, "deploy", pull, own)
		want = append(want, p.attempt(run, pull, 1, transient(1)))
		if i < 2 {
			p.attempt(run, pull, 2, ok(time.Second)) // run again by hand: it passed
		}
		p.attempt(run, own, 1, transient(1))
	}
	p.run("r3", "deploy", pull)
	p.attempt("r3", pull, 1, ok(time.Second))
	for i := range 3 {
		run := fmt.Sprintf("other%d", i)
		p.run(run, "covered", pull)
		p.attempt(run, pull, 1, transient(1))
	}
	st := NewState()
	st.Defaults["covered"] = event.StepDefaults{Family: "covered", Retries: intp(2)}
	got := onlyPattern(Evaluate(DefaultRules(), p.telemetry(), Input{State: st}), PatternRetries)
	if len(got) != 1 {
		t.Fatalf("got %d retries proposals, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Family != "deploy" || g.Subject != "deploy" || !slices.Equal(g.Evidence, want) {
		t.Errorf("family %q subject %q evidence %v, want deploy %v", g.Family, g.Subject, g.Evidence, want)
	}
	d := g.Change.Defaults
	if g.Change.Setting != event.SettingDefaultsRetries || d == nil || d.Family != "deploy" || d.Retries == nil || *d.Retries != 1 {
		t.Errorf("change %+v %+v, want defaults.retries 1 for deploy", g.Change, d)
	}
	if g.Rollback.Defaults == nil || g.Rollback.Setting != event.SettingDefaultsRetries || g.Rollback.Defaults.Retries != nil {
		t.Errorf("rollback %+v, want no default retries", g.Rollback)
	}
	if v := g.Validation; v.Method != "replay" || v.Retry != 3 || v.Pass != 3 || !strings.Contains(v.Summary, "2 of them passed when run again") {
		t.Errorf("validation %+v, want a replay: 3 retried (2 passed when run again), 3 pass", v)
	}
	if err := Forbidden(g.Change); err != nil {
		t.Errorf("the proposal's change is refused: %v", err)
	}
	// The same finding with more than the retries allowed, or a timeout
	// slipped in, is refused (a model's draft of the change included).
	tel := p.telemetry()
	for name, d := range map[string]event.StepDefaults{
		"50 retries":   {Family: "deploy", Retries: intp(50)},
		"with timeout": {Family: "deploy", Retries: intp(1), Timeout: event.Duration(time.Hour)},
	} {
		c := event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsRetries, Defaults: &d}
		if _, err := ReplayDefaults(c, tel.Attempts); !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: replay = %v, want ErrForbidden", name, err)
		}
	}
}

// TestPatternRetriesNotOnLogic: steps that failed on their logic (an
// exit of the command, no transient class), however often, and steps
// that timed out (the timeouts rule's), give no retries proposal.
func TestPatternRetriesNotOnLogic(t *testing.T) {
	p := plant(t)
	build := event.Step{ID: "build", Run: "make build"}
	slow := event.Step{ID: "slow", Run: "./slow.sh"}
	for i := range 5 {
		run := fmt.Sprintf("r%d", i)
		p.run(run, "ci", build, slow)
		p.attempt(run, build, 1, failed(2))
		p.attempt(run, build, 2, failed(2))
		p.attempt(run, slow, 1, timedOut(time.Minute))
	}
	if got := onlyPattern(Evaluate(DefaultRules(), p.telemetry(), Input{State: NewState()}), PatternRetries); len(got) != 0 {
		t.Fatalf("logic failures and timeouts gave retries proposals: %+v", got)
	}
}
