package policy

import (
	"errors"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
)

func TestApplied(t *testing.T) {
	text := "name: small\nrules:\n  - pattern: \"rm -rf\"\n    level: high\n"
	p, err := Parse([]byte(text), "small")
	if err != nil {
		t.Fatal(err)
	}
	d := func(base int64, source string) event.PolicyAppliedData {
		return event.PolicyAppliedData{Base: base, Name: "small", Hash: p.Hash(), Text: text, Source: source, Step: "deploy"}
	}
	tests := []struct {
		name    string
		current int64
		typ     event.Type
		d       event.PolicyAppliedData
		want    int64 // 0: not taken
	}{
		{"first apply", 0, event.PolicyApplied, d(0, event.PolicyFromApply), 1},
		{"apply on the version in force", 4, event.PolicyApplied, d(4, event.PolicyFromApply), 5},
		{"apply on an older version", 4, event.PolicyApplied, d(3, event.PolicyFromApply), 0},
		{"apply on a newer version", 4, event.PolicyApplied, d(5, event.PolicyFromApply), 0},
		{"bootstrap into an empty history", 0, event.PolicyRecorded, d(0, event.PolicyFromBootstrap), 1},
		{"bootstrap over a held policy", 1, event.PolicyRecorded, d(1, event.PolicyFromBootstrap), 0},
		{"leader's apply over a held policy", 1, event.PolicyRecorded, d(1, event.PolicyFromApply), 0},
		{"remembered rule", 1, event.PolicyRecorded, d(1, event.PolicyFromRemember), 2},
		{"remembered rule into an empty history", 0, event.PolicyRecorded, d(0, event.PolicyFromRemember), 0},
		{"not a policy event", 0, event.GoalSubmitted, d(0, event.PolicyFromApply), 0},
		{"text that does not load", 0, event.PolicyApplied, event.PolicyAppliedData{Hash: p.Hash(), Text: "rules: [{levle: high}]", Source: event.PolicyFromApply}, 0},
		{"hash of other text", 0, event.PolicyApplied, event.PolicyAppliedData{Hash: Default().Hash(), Text: text, Source: event.PolicyFromApply}, 0},
	}
	for _, tt := range tests {
		ev := event.Event{Type: tt.typ, Run: "run-1", Data: event.MustDraft(tt.typ, "", tt.d).Data}
		if tt.typ == event.GoalSubmitted {
			ev.Data = event.MustDraft(event.PolicyApplied, "", tt.d).Data
		}
		got, _, err := Applied(tt.current, ev)
		switch {
		case tt.want == 0 && !errors.Is(err, ErrNotApplied):
			t.Errorf("%s: taken (%v), want ignored", tt.name, err)
		case tt.want != 0 && (err != nil || got.Version != tt.want || got.Hash() != p.Hash()):
			t.Errorf("%s: = %+v, %v; want version %d", tt.name, got, err, tt.want)
		}
	}
}
